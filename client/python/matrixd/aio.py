"""matrixd.aio.Client: matrixd.Client on asyncio (grpc.aio). The same methods, awaited.

    async with matrixd.aio.Client("localhost:50051") as client:
        d = await client.det(a)
        async with await client.upload(big) as remote:
            c = (await client.multiply(remote, remote)).c
        job = await client.submit("permanent", a)
        async for status in job.watch(): ...
        result = await job.wait()

Shared memory: SharedMatrix operands and outputs= work as on matrixd.Client; make system
(/dev/shm) regions with a blocking matrixd.Client on the same server (registration is one call
per region). CUDA regions register here too:

    async with await client.register_cuda_shared_memory(name, handle, device_id, nbytes) as r:
        await client.multiply(r.matrix(0, (n, n)), r.matrix(0, (n, n)))
"""

from typing import AsyncIterator, List, Optional

import grpc

from matrixd import _base, _ops, _transfer, errors, results
from matrixd.cuda_shared_memory import CudaSharedRegion
from matrixd.remote import RemoteFactorization, RemoteMatrix
from matrixd.v1 import matrixd_pb2

pb = matrixd_pb2


class Client(_base.ClientBase):
    """matrixd.Client's arguments and methods; every method is a coroutine."""

    _channels = grpc.aio

    async def _invoke(self, rpc: str, request, timeout: Optional[float]):
        try:
            return await getattr(self._stub, rpc)(request, timeout=self._deadline(timeout),
                                                  metadata=self._metadata)
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None

    async def _stream(self, rpc: str, request, timeout: Optional[float]):
        call = getattr(self._stub, rpc)(request, timeout=self._deadline(timeout),
                                        metadata=self._metadata)
        try:
            async for message in call:
                yield message
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None

    async def _send(self, call: _ops.Call, timeout: Optional[float]):
        return call.parse(await self._invoke(call.rpc, call.request, timeout), self)

    async def det(self, a, method="auto", modulus=0, timeout=None,
                  return_residues=False) -> results.Determinant:
        return await self._send(_ops.determinant(a, method, modulus, self.check,
                                                 return_residues=return_residues), timeout)

    determinant = det

    async def factorize(self, a, kind="lu", rhs=None, keep=False, keep_input=False,
                        timeout=None, outputs=None, **options) -> results.Factorization:
        """options: estimate_condition, refine, refine_precision, refine_max_iterations, deterministic,
        devices (as Client.factorize)."""
        return await self._send(
            _ops.factorize(a, kind, rhs, keep, keep_input, self.check, outputs, **options),
            timeout)

    async def lu(self, a, rhs=None, **kwargs) -> results.Factorization:
        return await self.factorize(a, "lu", rhs, **kwargs)

    async def cholesky(self, a, rhs=None, **kwargs) -> results.Factorization:
        return await self.factorize(a, "cholesky", rhs, **kwargs)

    async def qr(self, a, rhs=None, **kwargs) -> results.Factorization:
        return await self.factorize(a, "qr", rhs, **kwargs)

    async def solve(self, a, b, transpose="N", residual=False, keep=False, kind="lu",
                    timeout=None, outputs=None) -> results.Solution:
        if isinstance(a, RemoteFactorization):
            return await self._send(
                _ops.solve(a, b, transpose, residual, keep, self.check, outputs), timeout)
        return await self._send(_ops.solve_inline(a, b, kind, self.check, outputs), timeout)

    async def multiply(self, a, b, transpose_a=False, transpose_b=False, block_size=0,
                       allow_tf32=False, keep=False, timeout=None, outputs=None,
                       verify=False, deterministic=False) -> results.Product:
        return await self._send(_ops.multiply(a, b, transpose_a, transpose_b, block_size,
                                              allow_tf32, keep, self.check, outputs,
                                              verify=verify, deterministic=deterministic),
                                timeout)

    async def permanent(self, a, method="auto", timeout=None, precision="extended",
                        walk="auto", return_residues=False) -> results.Permanent:
        return await self._send(_ops.permanent(a, method, self.check, precision, walk,
                                               return_residues=return_residues), timeout)

    async def submit(self, operation: str, *args, job_timeout=None, timeout=None,
                     **kwargs) -> "Job":
        call = _ops.job_call(operation, args, kwargs, self.check)
        handle = await self._invoke("Submit", _ops.job_request(call, job_timeout), timeout)
        return Job(self, handle.job_id, call)

    async def upload(self, a, label="", timeout=None, layout="single") -> RemoteMatrix:
        info = await self._invoke("Upload", _transfer.upload_chunks(a, label, layout=layout),
                                  timeout)
        return self._remote(info)

    async def generate(self, rows, cols, dtype="float64", kind="random", seed=0, label="",
                       layout="single", timeout=None) -> RemoteMatrix:
        request = _transfer.generate_request(rows, cols, dtype, kind, seed, label, layout)
        return self._remote(await self._invoke("Generate", request, timeout))

    async def download(self, matrix, rows=None, timeout=None):
        handle = matrix.handle if isinstance(matrix, RemoteMatrix) else matrix
        assembler = _transfer.DownloadAssembler()
        async for chunk in self._stream("Download", _transfer.download_request(handle, rows),
                                        timeout):
            assembler.add(chunk)
        return assembler.array()

    async def list_matrices(self, timeout=None) -> List[RemoteMatrix]:
        response = await self._invoke("ListMatrices", pb.ListMatricesRequest(), timeout)
        return [self._remote(info, track=False) for info in response.matrices]

    async def release(self, matrix: RemoteMatrix, timeout=None) -> int:
        response = await self._invoke("Release", pb.ReleaseRequest(handle=matrix.handle), timeout)
        self._forget(matrix)
        return response.bytes_freed

    async def register_cuda_shared_memory(self, name: str, raw_handle: bytes, device_id: int,
                                          byte_size: int, timeout=None) -> CudaSharedRegion:
        """As Client.register_cuda_shared_memory; the region is an async context manager (leaving
        it unregisters the region) and its unregister() a coroutine."""
        request = pb.RegisterCudaSharedMemoryRequest(name=name, raw_handle=bytes(raw_handle),
                                                     device_id=device_id, byte_size=byte_size)
        await self._invoke("RegisterCudaSharedMemory", request, timeout)
        return CudaSharedRegion(self, name, device_id, byte_size)

    async def unregister_cuda_shared_memory(self, name: str = "", timeout=None) -> int:
        request = pb.UnregisterCudaSharedMemoryRequest(name=name)
        return (await self._invoke("UnregisterCudaSharedMemory", request, timeout)).unregistered

    async def list_shared_memory(self, timeout=None) -> List[results.SharedMemoryInfo]:
        response = await self._invoke("ListSharedMemory", pb.ListSharedMemoryRequest(), timeout)
        return [_ops.shared_memory_info(region) for region in response.regions]

    async def _release_quietly(self, matrix: RemoteMatrix) -> None:
        if matrix.released:
            return
        try:
            await self.release(matrix)
        except errors.NotFound:
            self._forget(matrix)

    async def close(self) -> None:
        for matrix in list(self._resident.values()):
            try:
                await self._release_quietly(matrix)
            except errors.MatrixdError:
                pass  # the channel is going away; the server's TTL frees it
        await self._channel.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()


class Job:
    """matrixd.Job on asyncio: await progress(), wait(), cancel(); async for in watch()."""

    def __init__(self, client: Client, job_id: str, call: _ops.Call):
        self.client = client
        self.id = job_id
        self._call = call

    async def progress(self, timeout=None) -> results.JobStatus:
        return _ops.job_status(
            await self.client._invoke("GetJob", pb.JobId(job_id=self.id), timeout))

    async def watch(self, timeout=None) -> AsyncIterator[results.JobStatus]:
        async for update in self.client._stream("Watch", pb.JobId(job_id=self.id), timeout):
            yield _ops.job_status(update)

    async def wait(self, timeout=None, progress=False):
        with _ops.JobFollower(self.id, self._call, progress) as follower:
            async for update in self.client._stream("Watch", pb.JobId(job_id=self.id), timeout):
                follower.see(update)
        return follower.result(self.client)

    async def cancel(self, timeout=None) -> results.JobStatus:
        return _ops.job_status(
            await self.client._invoke("Cancel", pb.JobId(job_id=self.id), timeout))
