"""Upload and Download streams: chunking an array out, assembling one back, both CRC32C-checked."""

from typing import Iterator, Optional

import numpy as np

from matrixd import _wire, errors
from matrixd._crc32c import crc32c
from matrixd.v1 import matrixd_pb2

# A 1 MiB chunk stays in cache between its copy and the CRC32C over it, so neither direction reads
# the whole matrix a second time. (On the shared 2-core VM, 1 MiB and the server's default 4 MiB
# measured within run-to-run noise of each other.)
CHUNK_BYTES = 1 << 20


def upload_chunks(a, label: str = "", chunk_bytes: int = CHUNK_BYTES, layout: str = "single"
                  ) -> Iterator[matrixd_pb2.UploadChunk]:
    """The Upload stream of a 2-D array: shape, dtype and layout ("single" or "distributed":
    over every GPU of the server) in the first message, the row-major bytes in chunks (each copied
    once out of the array, never the whole at once), and the CRC32C, computed chunk by chunk, in a
    last message without data."""
    wire_layout = _wire.wire_choice(layout, _wire.LAYOUTS, "layout")
    a = _wire.as_wire_array(a, "matrix")
    if a.ndim != 2:
        raise errors.InvalidArgument(f"matrix has {a.ndim} dimensions; upload takes 2")
    rows, cols = a.shape
    if rows <= 0 or cols <= 0:
        raise errors.InvalidArgument(
            f"matrix has shape {rows}x{cols}; rows and cols must be >= 1")
    packed = np.ascontiguousarray(_wire.little_endian(a)).reshape(-1).view(np.uint8)
    first = matrixd_pb2.UploadChunk(rows=rows, cols=cols, dtype=_wire.wire_dtype(a.dtype),
                                    label=label, layout=wire_layout)

    def chunks():
        crc = 0
        for offset in range(0, packed.size, chunk_bytes):
            chunk = first if offset == 0 else matrixd_pb2.UploadChunk()
            chunk.offset = offset
            piece = packed[offset:offset + chunk_bytes]
            crc = crc32c(piece, crc)
            chunk.data = piece.tobytes()
            yield chunk
        last = matrixd_pb2.UploadChunk(offset=packed.size)
        last.checksum.crc32c = crc
        yield last

    return chunks()


def generate_request(rows: int, cols: int, dtype, kind: str, seed: int, label: str,
                     layout: str) -> matrixd_pb2.GenerateRequest:
    """A Generate request: a rows x cols matrix of `dtype` made on the server ("random" seeded,
    uniform in [-1, 1); "identity"; "hilbert"), kept as `layout` says."""
    return matrixd_pb2.GenerateRequest(
        rows=rows, cols=cols, dtype=_wire.wire_dtype(dtype),
        generator=_wire.wire_choice(kind, _wire.GENERATORS, "kind"), seed=seed, label=label,
        layout=_wire.wire_choice(layout, _wire.LAYOUTS, "layout"))


def download_request(handle: str, rows: Optional[tuple], chunk_bytes: int = CHUNK_BYTES):
    request = matrixd_pb2.DownloadRequest(handle=handle, chunk_bytes=chunk_bytes)
    if rows is not None:
        request.row_begin, request.row_end = rows
    return request


class DownloadAssembler:
    """Writes DownloadChunks into one array by offset and checks the CRC32C at the end."""

    def __init__(self):
        self._buffer = None
        self._shape = None
        self._wire = None
        self._crc = None
        self._running_crc = 0
        self._received = 0

    def add(self, chunk: matrixd_pb2.DownloadChunk) -> None:
        if self._buffer is None:
            self._shape, self._wire = (chunk.rows, chunk.cols), chunk.dtype
            size = chunk.rows * chunk.cols * _wire.DTYPES[chunk.dtype].itemsize
            self._buffer = np.empty(size, dtype=np.uint8)
        data = chunk.data
        end = chunk.offset + len(data)
        if end > self._buffer.size:
            raise errors.DataLoss(f"download chunk ends at byte {end}, past {self._buffer.size}")
        if chunk.offset != self._received:
            raise errors.DataLoss(f"download chunk at byte {chunk.offset}, want {self._received}")
        self._buffer[chunk.offset:end] = np.frombuffer(data, dtype=np.uint8)
        self._running_crc = crc32c(data, self._running_crc)
        self._received += len(data)
        if chunk.crc32c:
            self._crc = chunk.crc32c

    def array(self) -> np.ndarray:
        if self._buffer is None:
            raise errors.DataLoss("download stream ended without a chunk")
        if self._received != self._buffer.size:
            raise errors.DataLoss(
                f"download carried {self._received} bytes, want {self._buffer.size}")
        actual = self._running_crc
        if self._crc is not None and actual != self._crc:
            raise errors.DataLoss(
                f"download CRC32C is {actual:#010x}, the server sent {self._crc:#010x}")
        return self._buffer.view(_wire.DTYPES[self._wire]).reshape(self._shape)
