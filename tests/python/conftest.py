"""Fixtures of the Python client's tests: a real matrixd (CPU backend) on a free loopback port.

MATRIXD_SERVER names the server binary and MATRIXD_CTL matrixctl (ctest sets both; the defaults
are the build/ folder of this checkout). The package itself is imported from PYTHONPATH, where
ctest puts the one setup.py built (with its generated stubs).
"""

import os
import pathlib
import re
import subprocess

import numpy as np
import pytest

import matrixd

ROOT = pathlib.Path(__file__).resolve().parents[2]
SERVER = os.environ.get("MATRIXD_SERVER", str(ROOT / "build/server/matrixd"))
CTL = os.environ.get("MATRIXD_CTL", str(ROOT / "build/client/matrixctl"))


@pytest.fixture(scope="session")
def server():
    """The address of a matrixd started for this session; stopped at its end."""
    process = subprocess.Popen(
        [SERVER, "--listen=127.0.0.1:0", "--metrics=", "--backend=cpu", "--cpu_workers=2"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        for line in process.stdout:
            found = re.search(r"listening on (\S+)", line)
            if found:
                break
        else:
            raise RuntimeError(f"{SERVER} exited with {process.wait()} before listening")
        yield found.group(1)
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def client(server):
    with matrixd.Client(server, timeout=120) as c:
        yield c


@pytest.fixture
def rng():
    return np.random.default_rng(20261125)


def random_matrix(rng, shape, dtype):
    """Entries in [-1, 1) (complex: both parts), small integers for int64, any for uint32."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype(dtype)
    if dtype == np.int64:
        return rng.integers(-9, 10, shape, dtype=np.int64)
    if dtype == np.uint32:
        return rng.integers(0, 2**32, shape, dtype=np.uint32)
    return rng.uniform(-1, 1, shape).astype(dtype)
