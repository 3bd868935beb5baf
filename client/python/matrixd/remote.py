"""Handles on matrices the server keeps between calls (resident matrices).

A RemoteMatrix is made by Client.upload or by an operation with keep=True, and is accepted by
every operation wherever an array is. It is released by release(), on leaving its `with` block
(`async with` for matrixd.aio), or when its client closes; the server also drops it after
--resident_ttl of idleness.
"""

import numpy as np

from matrixd import _wire
from matrixd.v1 import matrixd_pb2

_KINDS = {
    matrixd_pb2.FACTORIZATION_KIND_LU: "lu",
    matrixd_pb2.FACTORIZATION_KIND_CHOLESKY: "cholesky",
    matrixd_pb2.FACTORIZATION_KIND_QR: "qr",
}


class RemoteMatrix:
    """A resident matrix: its handle, shape, dtype and where it lives."""

    def __init__(self, client, info: matrixd_pb2.ResidentMatrix):
        self._client = client
        self.released = False
        self.refresh(info)

    def refresh(self, info: matrixd_pb2.ResidentMatrix) -> None:
        """Takes the server's newer description (ListMatrices) of this matrix."""
        self.handle = info.handle
        self.shape = (info.rows, info.cols)
        self.wire_dtype = info.dtype
        self.dtype = _wire.DTYPES.get(info.dtype, np.dtype("V1"))
        self.nbytes = info.bytes
        self.device = info.device
        self.label = info.label
        self.spilled = info.spilled
        self.missing_bytes = info.missing_bytes
        self.idle_seconds = info.idle_seconds
        self.layout = _wire.LAYOUT_NAMES.get(info.layout, "single")

    @property
    def ndim(self) -> int:
        return 2

    def download(self, rows=None, timeout=None):
        """The matrix as a numpy array (rows: a (begin, end) range of rows)."""
        return self._client.download(self, rows=rows, timeout=timeout)

    def release(self, timeout=None):
        """Frees the matrix on the server now; returns the bytes freed."""
        return self._client.release(self, timeout=timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._client._release_quietly(self)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self._client._release_quietly(self)

    def __repr__(self):
        state = " released" if self.released else ""
        return (f"<{type(self).__name__} {self.handle} {self.shape[0]}x{self.shape[1]} "
                f"{self.dtype} on {self.device!r}{state}>")


class RemoteFactorization(RemoteMatrix):
    """A kept factorization (Factorize with keep=True): Solve takes it, any number of times.

    Downloaded or used as an operand it is its factor (lu, l or q).
    """

    def refresh(self, info: matrixd_pb2.ResidentMatrix) -> None:
        super().refresh(info)
        self.kind = _KINDS.get(info.factorization_kind, "lu")
        self.input_kept = info.input_kept

    def solve(self, b, **kwargs):
        """Client.solve(self, b, ...)."""
        return self._client.solve(self, b, **kwargs)


def remote_for(client, info: matrixd_pb2.ResidentMatrix) -> RemoteMatrix:
    """A new handle object of the right class for a ResidentMatrix."""
    if info.factorization_kind != matrixd_pb2.FACTORIZATION_KIND_UNSPECIFIED:
        return RemoteFactorization(client, info)
    return RemoteMatrix(client, info)
