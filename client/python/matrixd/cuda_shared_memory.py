"""CUDA shared memory: device arrays of this process that a same-host server reads and writes in
place, through CUDA IPC handles (no copy through the host or gRPC).

    import cupy
    cupy.cuda.set_allocator(None)        # one cudaMalloc per array: its handle is its own
    a = cupy.random.rand(n, n); b = cupy.random.rand(n, n); c = cupy.empty((n, n))
    cupy.cuda.runtime.deviceSynchronize()          # the server reads what is written now
    regions = [client.register_cuda_shared_memory(
                   name, cupy.cuda.runtime.ipcGetMemHandle(x.data.ptr), x.device.id, x.nbytes)
               for name, x in (("a", a), ("b", b), ("c", c))]
    with regions[0], regions[1], regions[2]:
        ra, rb, rc = (r.matrix(0, (n, n)) for r in regions)
        client.multiply(ra, rb, outputs={"c": rc})      # C written into c on the device

torch: `storage = t.untyped_storage(); handle = storage._share_cuda_()[1]` gives the handle of the
allocation the tensor lives in; its data starts `storage._share_cuda_()[3]` bytes in (pass that
as the offset of region.matrix), and the caching allocator keeps the allocation alive.

The region starts at the start of the allocation the handle names (cudaIpcGetMemHandle maps whole
allocations): with cupy's memory pool on, an array may sit anywhere inside a larger pool block, so
turn the pool off (as above) or give the array's offset in the block. The server must run on this
host with the same GPU visible (docs/operations.md, "CUDA shared memory"). Keep each array alive,
and do not write it while an operation runs, until its region is unregistered.
"""

from typing import Tuple

import numpy as np

from matrixd import _wire, errors
from matrixd.shared_memory import SharedMatrix


class CudaSharedMatrix(SharedMatrix):
    """A matrix at `offset` bytes into a registered CUDA region: operations take it wherever they
    take an array (sent as a reference) and write results into it (outputs=...). It has no host
    view (`array` is None): read it with the library that owns the device memory."""

    def __init__(self, region: "CudaSharedRegion", offset: int, shape: Tuple[int, ...], dtype):
        # No host mapping to view, unlike SharedMatrix.
        # pylint: disable=super-init-not-called
        self.region = region
        self.offset = offset
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.wire = _wire.wire_dtype(self.dtype)
        self.array = None

    def __repr__(self):
        return (f"<matrixd.CudaSharedMatrix {'x'.join(map(str, self.shape))} {self.dtype.name} "
                f"at {self.region.name}+{self.offset} (device {self.region.device_id})>")


class CudaSharedRegion:
    """A CUDA region registered with the server (Client.register_cuda_shared_memory). Use it as a
    context manager (`async with` on matrixd.aio.Client): leaving it unregisters the region (the
    device memory stays the caller's)."""

    def __init__(self, client, name: str, device_id: int, byte_size: int):
        self.client = client
        self.name = name
        self.device_id = device_id
        self.size = byte_size
        self.registered = True

    @property
    def closed(self) -> bool:
        return not self.registered

    def matrix(self, offset: int, shape, dtype=np.float64) -> CudaSharedMatrix:
        """The matrix of `shape` (2-D, or 3-D for a batch) and dtype at `offset` bytes."""
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape)) * dtype.itemsize
        if len(shape) not in (2, 3) or min(shape) <= 0:
            raise errors.InvalidArgument(f"shape {tuple(shape)}: want 2 or 3 positive dimensions")
        if offset < 0 or offset % dtype.itemsize or offset + nbytes > self.size:
            raise errors.InvalidArgument(
                f"{tuple(shape)} {dtype.name} at offset {offset} does not fit CUDA region "
                f"{self.name} ({self.size} bytes) or is misaligned")
        return CudaSharedMatrix(self, offset, shape, dtype)

    def unregister(self):
        """Unregisters the region: the client's answer (a coroutine to await on
        matrixd.aio.Client)."""
        if not self.registered:
            raise errors.FailedPrecondition(f"CUDA region {self.name} is not registered")
        self.registered = False
        return self.client.unregister_cuda_shared_memory(self.name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.registered:
            self.unregister()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        if self.registered:
            await self.unregister()

    def __repr__(self):
        return (f"<matrixd.CudaSharedRegion {self.name} {self.size} bytes on device "
                f"{self.device_id}{'' if self.registered else ', unregistered'}>")
