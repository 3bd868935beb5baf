#!/usr/bin/env python3
"""Resident-matrix load for deploy/dashboard-check.sh: upload, use by handle, download, release.

  resident-load.py --server HOST:PORT --duration SECONDS [--n N] [--parts P] [--keep K]

Until --duration has passed, each round uploads an n x n float64 matrix (alternately by one Upload
stream, and by CreateMatrix plus P Upload streams at once, one connection each, as a parallel
upload does), takes its determinant by handle, multiplies it by itself with the product kept
resident (keep_result) and takes the product's determinant by handle, downloads the matrix and
checks its bytes and CRC32C, and asks for the determinant of an already released handle (NOT_FOUND
expected). At most K uploaded matrices stay resident at once (the oldest is released first), so
the resident gauges move; everything is released at the end.

Needs grpcio and the protobuf runtime (Debian: python3-grpcio, python3-protobuf). The message
classes come from PYTHONPATH when matrixd.v1.matrixd_pb2 is importable there (made beforehand with
`protoc -Iproto --python_out=DIR proto/matrixd/v1/*.proto`, for a machine without protoc), else
protoc (protobuf-compiler, which the build needs too; $PROTOC names another) generates them from
proto/ into a temporary directory. The RPCs are called through grpcio's generic stubs: Debian
12's grpc_tools bundles protoc 3.5, which cannot read proto3 `optional` fields. Exit status 0 when every call answered as expected, 1 otherwise, 3 when
grpcio, protobuf or protoc is missing.
"""

import argparse
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time

try:
    import google.protobuf  # noqa: F401  (the generated classes need it)
    import grpc
except ImportError as error:
    print(f"resident-load: {error}; install python3-grpcio and python3-protobuf", file=sys.stderr)
    sys.exit(3)

PROTO_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "proto")
CHUNK_BYTES = 64 * 1024


def load_messages(directory):
    """The matrixd.v1 message classes: from PYTHONPATH, or generated into `directory`."""
    try:
        from matrixd.v1 import matrix_pb2, matrixd_pb2
        return matrix_pb2, matrixd_pb2
    except ImportError:
        pass
    protoc = os.environ.get("PROTOC") or shutil.which("protoc")
    if not protoc:
        print("resident-load: no protoc on PATH; install protobuf-compiler or set PROTOC",
              file=sys.stderr)
        sys.exit(3)
    protos = [os.path.join(PROTO_ROOT, "matrixd", "v1", name)
              for name in ("matrix.proto", "matrixd.proto")]
    subprocess.run([protoc, f"-I{PROTO_ROOT}", f"--python_out={directory}"] + protos, check=True)
    sys.path.insert(0, directory)
    from matrixd.v1 import matrix_pb2, matrixd_pb2
    return matrix_pb2, matrixd_pb2


class MatrixService:
    """The MatrixService methods this load calls, as grpcio generic stubs on one channel."""

    def __init__(self, channel, pb2):
        def method(kind, name, request, response):
            return getattr(channel, kind)(f"/matrixd.v1.MatrixService/{name}",
                                          request_serializer=request.SerializeToString,
                                          response_deserializer=response.FromString)

        self.Upload = method("stream_unary", "Upload", pb2.UploadChunk, pb2.ResidentMatrix)
        self.CreateMatrix = method("unary_unary", "CreateMatrix", pb2.CreateMatrixRequest,
                                   pb2.ResidentMatrix)
        self.Download = method("unary_stream", "Download", pb2.DownloadRequest,
                               pb2.DownloadChunk)
        self.Release = method("unary_unary", "Release", pb2.ReleaseRequest, pb2.ReleaseResponse)
        self.Determinant = method("unary_unary", "Determinant", pb2.DeterminantRequest,
                                  pb2.DeterminantResponse)
        self.Multiply = method("unary_unary", "Multiply", pb2.MultiplyRequest,
                               pb2.MultiplyResponse)


def crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        table.append(crc)
    return table


CRC32C_TABLE = crc32c_table()


def crc32c(data):
    """CRC32C (Castagnoli) as the Upload and Download streams carry it."""
    crc = 0xFFFFFFFF
    table = CRC32C_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


class ResidentLoad:
    def __init__(self, args, messages):
        self.args = args
        self.matrix_pb2, self.pb2 = messages
        self.stub = MatrixService(grpc.insecure_channel(args.server), self.pb2)
        # One connection per part of a parallel upload: channels to one address share their
        # connection through gRPC's global subchannel pool unless each has a pool of its own.
        self.part_stubs = [
            MatrixService(grpc.insecure_channel(
                args.server, options=[("grpc.use_local_subchannel_pool", 1)]), self.pb2)
            for _ in range(args.parts)
        ]
        self.calls = {}
        self.checksums = {}  # (id of the matrix's bytes, begin, end): CRC32C
        self.failures = []

    def count(self, what):
        self.calls[what] = self.calls.get(what, 0) + 1

    def fail(self, what, detail):
        self.failures.append(f"{what}: {detail}")

    def chunks(self, data, begin, end, first):
        """UploadChunk messages for data[begin:end]; `first` fields go in the first one. Made
        before the call starts, so that the server's stream time (matrixd_transfer_seconds_total)
        does not include this script's slow CRC32C."""
        key = (id(data), begin, end)
        if key not in self.checksums:
            self.checksums[key] = crc32c(data[begin:end])
        messages = []
        for offset in range(begin, end, CHUNK_BYTES):
            size = min(CHUNK_BYTES, end - offset)
            messages.append(self.pb2.UploadChunk(offset=offset, data=data[offset:offset + size]))
        messages[0].MergeFrom(first)
        messages[0].checksum.crc32c = self.checksums[key]
        return messages

    def upload_stream(self, data, n, label):
        first = self.pb2.UploadChunk(rows=n, cols=n, dtype=self.matrix_pb2.DTYPE_FLOAT64,
                                     label=label)
        self.count("upload")
        return self.stub.Upload(iter(self.chunks(data, 0, len(data), first)), timeout=30).handle

    def upload_parallel(self, data, n, label):
        created = self.stub.CreateMatrix(
            self.pb2.CreateMatrixRequest(rows=n, cols=n, dtype=self.matrix_pb2.DTYPE_FLOAT64,
                                         label=label), timeout=30)
        self.count("create")
        parts = len(self.part_stubs)
        elements = n * n
        bounds = [8 * (elements * i // parts) for i in range(parts + 1)]
        first = self.pb2.UploadChunk(handle=created.handle)
        streams = [self.chunks(data, begin, end, first) for begin, end in zip(bounds, bounds[1:])]
        futures = []
        for stub, messages in zip(self.part_stubs, streams):
            futures.append(stub.Upload.future(iter(messages), timeout=30))
            self.count("upload part")
        missing = [future.result().missing_bytes for future in futures]
        if min(missing) != 0:
            self.fail("parallel upload", f"missing bytes after every part: {missing}")
        return created.handle

    def determinant(self, handle):
        request = self.pb2.DeterminantRequest(matrix_ref=self.pb2.MatrixRef(handle=handle))
        self.count("det by handle")
        return self.stub.Determinant(request, timeout=30)

    def square_kept(self, handle):
        ref = self.pb2.MatrixRef(handle=handle)
        request = self.pb2.MultiplyRequest(
            a_ref=ref, b_ref=ref, result_options=self.pb2.ResultOptions(keep_result=True))
        self.count("multiply kept")
        return self.stub.Multiply(request, timeout=30).kept["c"].handle

    def download(self, handle):
        data = bytearray()
        crc = None
        for chunk in self.stub.Download(self.pb2.DownloadRequest(handle=handle), timeout=30):
            if chunk.offset != len(data):
                self.fail("download", f"chunk at offset {chunk.offset}, want {len(data)}")
            data += chunk.data
            if chunk.crc32c:
                crc = chunk.crc32c
        self.count("download")
        if crc is not None and crc != crc32c(data):
            self.fail("download", f"CRC32C {crc:08x} sent, {crc32c(data):08x} received")
        return bytes(data)

    def release(self, handle):
        self.count("release")
        self.stub.Release(self.pb2.ReleaseRequest(handle=handle), timeout=30)

    def released_is_not_found(self, handle):
        try:
            self.determinant(handle)
            self.fail("det of a released handle", "answered OK, want NOT_FOUND")
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.NOT_FOUND:
                self.fail("det of a released handle", f"{error.code()}, want NOT_FOUND")

    def round(self, index, data, live):
        n = self.args.n
        parallel = index % 2 == 1
        upload = self.upload_parallel if parallel else self.upload_stream
        handle = upload(data, n, f"dashboard-check {index}")
        live.append(handle)
        det = self.determinant(handle)
        product = self.square_kept(handle)
        squared = self.determinant(product)
        # det(A^2) = det(A)^2: log|det| doubles.
        if abs(squared.log_abs - 2 * det.log_abs) > 1e-6 * max(1.0, abs(det.log_abs)):
            self.fail("det of the kept product", f"log|det| {squared.log_abs}, want "
                      f"{2 * det.log_abs}")
        self.release(product)
        if self.download(handle) != data:
            self.fail("download", f"matrix {handle} came back different")
        while len(live) > self.args.keep:
            released = live.pop(0)
            self.release(released)
            self.released_is_not_found(released)

    def run(self):
        rng = random.Random(1)
        n = self.args.n
        matrices = [struct.pack(f"<{n * n}d", *(rng.uniform(-1, 1) for _ in range(n * n)))
                    for _ in range(2)]
        live = []
        end = time.monotonic() + self.args.duration
        index = 0
        try:
            while time.monotonic() < end:
                try:
                    self.round(index, matrices[index % 2], live)
                except grpc.RpcError as error:
                    self.fail(f"round {index}", f"{error.code()}: {error.details()}")
                index += 1
        finally:
            for handle in live:
                try:
                    self.release(handle)
                except grpc.RpcError as error:
                    self.fail("release", f"{error.code()}: {error.details()}")
        return index


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", required=True)
    parser.add_argument("--duration", type=float, required=True)
    parser.add_argument("--n", type=int, default=96, help="order of the float64 matrices")
    parser.add_argument("--parts", type=int, default=2, help="streams of a parallel upload")
    parser.add_argument("--keep", type=int, default=3, help="uploaded matrices kept at once")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="resident-load.") as directory:
        load = ResidentLoad(args, load_messages(directory))
        started = time.monotonic()
        rounds = load.run()
        seconds = time.monotonic() - started
    print(f"resident-load: {rounds} rounds in {seconds:.1f} s, n = {args.n} float64, "
          f"{args.parts} parts per parallel upload")
    for what, calls in sorted(load.calls.items()):
        print(f"  {what:16} {calls:6d}")
    for failure in load.failures[:20]:
        print(f"  FAILED {failure}")
    if len(load.failures) > 20:
        print(f"  ... {len(load.failures) - 20} more failures")
    return 1 if load.failures else 0


if __name__ == "__main__":
    sys.exit(main())
