"""System shared memory: matrices that a same-host server reads and writes in place.

    with client.shared_memory(64 << 20) as region:   # /dev/shm/matrixd_..., registered
        a = region.put(big)                          # a SharedMatrix: a numpy view + where it is
        x = region.empty((n, 1))
        client.solve(a, b, outputs={"solution": x})  # operands by reference, X written into x
        print(x.array)

A SharedMemoryRegion is a POSIX shared-memory object (a file under /dev/shm, made with os.open,
ftruncate and mmap, as shm_open does), registered with the server under a name. Leaving the
`with` block (or close()) unregisters it, unmaps it and removes the file. The server must see the
same /dev/shm (same host, or containers sharing it: docs/operations.md, "Shared memory").
"""

import itertools
import mmap
import os
import re
from typing import Optional, Tuple

import numpy as np

from matrixd import _wire, errors
from matrixd.v1 import matrixd_pb2

pb = matrixd_pb2

SHM_DIR = "/dev/shm"
# Matrices are placed at multiples of this (as the C++ client's SharedMemoryRegion::kAlignment).
ALIGNMENT = 256
_counter = itertools.count()


class SharedMatrix:
    """A matrix (or a batch, 3-D) at `offset` bytes into a region. `array` is a writable numpy
    view of it, valid while the region is open; operations take a SharedMatrix wherever they
    take an array, and write results into one (outputs=...)."""

    def __init__(self, region: "SharedMemoryRegion", offset: int, shape: Tuple[int, ...], dtype):
        self.region = region
        self.offset = offset
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.wire = _wire.wire_dtype(self.dtype)
        count = int(np.prod(self.shape))
        self.array = np.frombuffer(region._mmap, dtype=self.dtype.newbyteorder("<"), count=count,
                                   offset=offset).reshape(self.shape)

    @property
    def batch(self) -> int:
        return self.shape[0] if len(self.shape) == 3 else 0

    @property
    def rows(self) -> int:
        """Rows as the wire counts them: a batch's matrices stacked."""
        return self.shape[0] * self.shape[1] if len(self.shape) == 3 else self.shape[0]

    @property
    def cols(self) -> int:
        return self.shape[-1]

    def shared_memory_ref(self) -> pb.SharedMemoryRef:
        return pb.SharedMemoryRef(region=self.region.name, offset=self.offset, rows=self.rows,
                                  cols=self.cols, dtype=self.wire)

    def __repr__(self):
        return (f"<matrixd.SharedMatrix {'x'.join(map(str, self.shape))} {self.dtype.name} "
                f"at {self.region.name}+{self.offset}>")


class SharedMemoryRegion:
    """SharedMemoryRegion(client, size, name=None, key=None, register=True)

    Makes a shared-memory object of `size` bytes (key: its shm_open name, "/matrixd_<name>" by
    default), maps it and registers it with the client's server as `name` (register=False: call
    register() later). FileExistsError when the key exists; the server's error (AlreadyExists for
    a name in use) after removing the object."""

    def __init__(self, client, size: int, name: Optional[str] = None, key: Optional[str] = None,
                 register: bool = True):
        if size <= 0:
            raise errors.InvalidArgument(f"size is {size}; a shared-memory region needs > 0 bytes")
        if not hasattr(client, "register_shared_memory"):
            raise errors.InvalidArgument(
                "make shared-memory regions with a blocking matrixd.Client (an aio client can "
                "use their SharedMatrix views)")
        self.client = client
        self.name = name or f"py-{os.getpid()}-{next(_counter)}"
        self.key = key or "/matrixd_" + re.sub(r"[^A-Za-z0-9_-]", "_", self.name)
        if not re.fullmatch(r"/[^/]+", self.key):
            raise errors.InvalidArgument(f"key {self.key!r} must be '/' and a name without slashes")
        self.size = size
        self.registered = False
        self._allocated = 0
        self._mmap = None
        self._path = SHM_DIR + self.key
        fd = os.open(self._path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            os.ftruncate(fd, size)
            self._mmap = mmap.mmap(fd, size)
        except BaseException:
            os.unlink(self._path)
            raise
        finally:
            os.close(fd)
        if register:
            try:
                self.register()
            except BaseException:
                self.close()
                raise

    # ---- the server ----

    def register(self) -> None:
        """Registers the whole object under self.name."""
        if self.registered:
            raise errors.FailedPrecondition(f"shared-memory region {self.name} is registered")
        self.client.register_shared_memory(self.name, self.key, self.size)
        self.registered = True

    def unregister(self) -> None:
        if not self.registered:
            raise errors.FailedPrecondition(f"shared-memory region {self.name} is not registered")
        self.registered = False
        self.client.unregister_shared_memory(self.name)

    # ---- placing matrices ----

    def view(self, offset: int, shape, dtype=np.float64) -> SharedMatrix:
        """The matrix of `shape` (2-D, or 3-D for a batch) and dtype at `offset`."""
        dtype = np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        if len(shape) not in (2, 3) or min(shape) <= 0:
            raise errors.InvalidArgument(f"shape {shape} is not a matrix or a batch of them")
        nbytes = int(np.prod(shape)) * dtype.itemsize
        if offset < 0 or offset % dtype.itemsize:
            raise errors.InvalidArgument(
                f"offset {offset} is not a multiple of the element size {dtype.itemsize}")
        if offset + nbytes > self.size:
            raise errors.InvalidArgument(
                f"{shape} {dtype.name} ({nbytes} bytes) at offset {offset} leaves "
                f"shared-memory region {self.name} of {self.size} bytes")
        return SharedMatrix(self, offset, shape, dtype)

    def empty(self, shape, dtype=np.float64) -> SharedMatrix:
        """A matrix at the next free offset (a multiple of ALIGNMENT), contents unset."""
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape)) * dtype.itemsize
        if self._allocated + nbytes > self.size:
            raise errors.ResourceExhausted(
                f"shared-memory region {self.name} has {max(self.size - self._allocated, 0)} "
                f"bytes left; {tuple(shape)} {dtype.name} needs {nbytes}")
        matrix = self.view(self._allocated, shape, dtype)
        self._allocated += -(-nbytes // ALIGNMENT) * ALIGNMENT
        return matrix

    def put(self, a) -> SharedMatrix:
        """A copy of array `a` (2-D, or 3-D for a batch) placed at the next free offset."""
        a = _wire.as_wire_array(a, "a")
        matrix = self.empty(a.shape, a.dtype)
        matrix.array[...] = a
        return matrix

    # ---- lifetime ----

    @property
    def closed(self) -> bool:
        return self._mmap is None

    def close(self) -> None:
        """Unregisters (errors ignored: the server may have dropped it), unmaps and removes the
        file. Views made from the region must not be used afterwards."""
        if self._mmap is None:
            return
        if self.registered:
            try:
                self.unregister()
            except errors.MatrixdError:
                pass
        try:
            self._mmap.close()
        except BufferError:
            pass  # numpy views still point into it: the mapping goes with the last of them
        self._mmap = None
        try:
            os.unlink(self._path)
        except FileNotFoundError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the client may be gone
            pass

    def __repr__(self):
        return f"<matrixd.SharedMemoryRegion {self.name} {self.key} {self.size} bytes>"
