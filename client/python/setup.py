"""Builds the matrixd package, generating the gRPC stubs from the repository's proto/ first.

The stubs are never checked in: build_py runs protoc on ../../proto/matrixd/v1/*.proto (or on
$MATRIXD_PROTO_DIR) and writes matrixd/v1/*_pb2*.py into the build tree, next to the hand-written
modules. protoc is, in this order: the system `protoc` with `grpc_python_plugin` (Debian's
protobuf-compiler and protobuf-compiler-grpc, the same protobuf release as python3-protobuf), then
grpc_tools.protoc (pip's grpcio-tools). Debian 12's python3-grpc-tools bundles protoc 3.5.1, which
rejects proto3 `optional`, so it is only the fallback.
"""

import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = pathlib.Path(__file__).resolve().parent
PROTO_FILES = ("matrixd/v1/matrix.proto", "matrixd/v1/matrixd.proto")


def proto_root() -> pathlib.Path:
    root = pathlib.Path(os.environ.get("MATRIXD_PROTO_DIR", HERE.parent.parent / "proto"))
    if not (root / PROTO_FILES[0]).is_file():
        sys.exit(f"setup.py: no {PROTO_FILES[0]} under {root}; set MATRIXD_PROTO_DIR")
    return root


def protoc_command(root: pathlib.Path, out: pathlib.Path) -> list:
    args = [f"-I{root}", f"--python_out={out}", f"--grpc_python_out={out}"]
    args += [str(root / p) for p in PROTO_FILES]
    protoc, plugin = shutil.which("protoc"), shutil.which("grpc_python_plugin")
    if protoc and plugin:
        return [protoc, f"--plugin=protoc-gen-grpc_python={plugin}"] + args
    return [sys.executable, "-m", "grpc_tools.protoc"] + args


class BuildWithStubs(build_py):
    """build_py that also writes the generated matrixd/v1 modules into build_lib."""

    def run(self):
        super().run()
        out = pathlib.Path(self.build_lib)
        (out / "matrixd" / "v1").mkdir(parents=True, exist_ok=True)
        subprocess.run(protoc_command(proto_root(), out), check=True)
        (out / "matrixd" / "v1" / "__init__.py").write_text('"""Generated from proto/."""\n')


setup(cmdclass={"build_py": BuildWithStubs})
