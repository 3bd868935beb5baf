"""matrixd.Client: the blocking client. One method per operation, numpy in, numpy out."""

from typing import Iterator, List, Optional, Union

import grpc

from matrixd import _base, _ops, _transfer, errors, results
from matrixd.remote import RemoteFactorization, RemoteMatrix
from matrixd.cuda_shared_memory import CudaSharedRegion
from matrixd.shared_memory import SharedMemoryRegion
from matrixd.v1 import matrixd_pb2

pb = matrixd_pb2


class Client(_base.ClientBase):
    """A connection to one matrixd server.

    Client("localhost:50051", tls=False, token=None, timeout=None, check=True)

    timeout: the default deadline of every call in seconds (None: none); each method's `timeout`
    overrides it. A call past its deadline raises DeadlineExceeded and the server drops its job.
    tls: True for TLS with the system roots, or grpc.ChannelCredentials. token: sent as
    "authorization: Bearer <token>". check: check shapes and dtypes before sending (the server
    checks again either way). Use it as a context manager, or call close(): closing releases the
    resident matrices this client made and has not released.
    """

    _channels = grpc

    # ---- plumbing ----

    def _invoke(self, rpc: str, request, timeout: Optional[float]):
        try:
            return getattr(self._stub, rpc)(request, timeout=self._deadline(timeout),
                                            metadata=self._metadata)
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None

    def _stream(self, rpc: str, request, timeout: Optional[float]):
        """The messages of a server-streaming call, its errors raised as MatrixdError."""
        try:
            yield from self._invoke(rpc, request, timeout)
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None

    def _send(self, call: _ops.Call, timeout: Optional[float]):
        return call.parse(self._invoke(call.rpc, call.request, timeout), self)

    # ---- operations ----

    def det(self, a, method: str = "auto", modulus: int = 0, timeout: Optional[float] = None,
            return_residues: bool = False, deterministic: bool = False) -> results.Determinant:
        """det(a): method "auto", "lu" or "condensation"; modulus p > 0 (int64 a): det mod p.
        return_residues=True: certificate.residues holds the residues behind an exact answer.
        deterministic=True (here and on every operation): a bit-identical repeat
        (docs/accuracy.md, "Bit-identical repeats")."""
        return self._send(_ops.determinant(a, method, modulus, self.check,
                                           return_residues=return_residues,
                                           deterministic=deterministic), timeout)

    determinant = det

    def factorize(self, a, kind: str = "lu", rhs=None, keep: bool = False,
                  keep_input: bool = False, timeout: Optional[float] = None,
                  outputs: Optional[dict] = None, estimate_condition: bool = False,
                  refine: bool = False, refine_precision: str = "input",
                  refine_max_iterations: int = 0,
                  deterministic: bool = False, devices: int = 0) -> results.Factorization:
        """LU, Cholesky or QR of a (3-D: a batch), optionally solving a @ x = rhs.
        keep=True keeps every result on the server (RemoteMatrix) and the factorization for
        solve(). outputs={"lu": SharedMatrix, ...} writes those results into shared memory (the
        result's field is then that SharedMatrix's array). estimate_condition=True (one matrix)
        fills result.accuracy: rcond and the relative error bound of a solve
        (docs/accuracy.md). refine=True (LU with rhs) refines x to working precision;
        refine_precision "input", "float32", "tf32" or "float16" is the factorization's
        precision (result.refinement says what ran). devices=N > 1: LU or Cholesky of one
        square matrix (any floating dtype) over N GPUs of the server (docs/distributed.md)."""
        return self._send(_ops.factorize(a, kind, rhs, keep, keep_input, self.check, outputs,
                                         estimate_condition=estimate_condition, refine=refine,
                                         refine_precision=refine_precision,
                                         refine_max_iterations=refine_max_iterations,
                                         deterministic=deterministic, devices=devices),
                          timeout)

    def lu(self, a, rhs=None, **kwargs) -> results.Factorization:
        return self.factorize(a, "lu", rhs, **kwargs)

    def cholesky(self, a, rhs=None, **kwargs) -> results.Factorization:
        return self.factorize(a, "cholesky", rhs, **kwargs)

    def qr(self, a, rhs=None, **kwargs) -> results.Factorization:
        return self.factorize(a, "qr", rhs, **kwargs)

    def solve(self, a, b, transpose: str = "N", residual: bool = False, keep: bool = False,
              kind: str = "lu", timeout: Optional[float] = None,
              outputs: Optional[dict] = None) -> results.Solution:
        """x with op(a) @ x = b. `a` is a RemoteFactorization (Factorize with keep=True; any
        transpose "N", "T", "C", residual and keep) or a matrix, factorized by `kind` for this
        one solve. A 1-D b gives a 1-D x. outputs={"solution": SharedMatrix} writes x there."""
        if isinstance(a, RemoteFactorization):
            return self._send(_ops.solve(a, b, transpose, residual, keep, self.check, outputs),
                              timeout)
        return self._send(_ops.solve_inline(a, b, kind, self.check, outputs), timeout)

    def multiply(self, a, b, transpose_a: bool = False, transpose_b: bool = False,
                 block_size: int = 0, allow_tf32: bool = False, keep: bool = False,
                 timeout: Optional[float] = None, outputs: Optional[dict] = None,
                 verify: bool = False, deterministic: bool = False) -> results.Product:
        """op(a) @ op(b) (plain transposes); block_size > 0: block-sparse.
        outputs={"c": SharedMatrix} writes the product there. verify=True also runs
        Freivalds' check of the product on the server (result.check)."""
        return self._send(_ops.multiply(a, b, transpose_a, transpose_b, block_size, allow_tf32,
                                        keep, self.check, outputs, verify=verify,
                                        deterministic=deterministic), timeout)

    def permanent(self, a, method: str = "auto", timeout: Optional[float] = None,
                  precision: str = "extended", walk: str = "auto",
                  return_residues: bool = False, deterministic: bool = False) -> results.Permanent:
        """per(a): method "auto", "ryser" or "glynn"; int64 a also gives the exact value (and with
        return_residues=True the residues behind it, certificate.residues).
        precision "extended" (double-double products, ~1e-14) or "fast" (plain double, ~1e-12);
        walk "auto" (sparse at <= 50% non-zeros; dense for "fast" on a GPU), "dense" or "sparse".
        The result says which precision and walk ran."""
        return self._send(_ops.permanent(a, method, self.check, precision, walk,
                                         return_residues=return_residues,
                                         deterministic=deterministic), timeout)

    # ---- jobs ----

    def submit(self, operation: str, *args, job_timeout: Optional[float] = None,
               timeout: Optional[float] = None, **kwargs) -> "Job":
        """Queues an operation ("det", "factorize", "lu", "cholesky", "qr", "multiply",
        "permanent", with that method's arguments) as a job and returns at once.
        job_timeout: seconds the job may take from submission (queued or running)."""
        call = _ops.job_call(operation, args, kwargs, self.check)
        handle = self._invoke("Submit", _ops.job_request(call, job_timeout), timeout)
        return Job(self, handle.job_id, call)

    # ---- resident matrices ----

    def upload(self, a, label: str = "", timeout: Optional[float] = None,
               layout: str = "single") -> RemoteMatrix:
        """Keeps a 2-D array on the server (streamed in 1 MiB chunks with its CRC32C); layout
        "distributed" spreads it over every GPU of the server (docs/distributed.md)."""
        info = self._invoke("Upload", _transfer.upload_chunks(a, label, layout=layout), timeout)
        return self._remote(info)

    def generate(self, rows: int, cols: int, dtype="float64", kind: str = "random", seed: int = 0,
                 label: str = "", layout: str = "single",
                 timeout: Optional[float] = None) -> RemoteMatrix:
        """Makes a resident matrix on the server, nothing uploaded: "random" (seeded, uniform in
        [-1, 1), the same on every backend), "identity" or "hilbert"."""
        request = _transfer.generate_request(rows, cols, dtype, kind, seed, label, layout)
        return self._remote(self._invoke("Generate", request, timeout))

    def download(self, matrix: Union[RemoteMatrix, str], rows: Optional[tuple] = None,
                 timeout: Optional[float] = None):
        """A resident matrix (or rows (begin, end) of it) as a numpy array, CRC32C-checked."""
        handle = matrix.handle if isinstance(matrix, RemoteMatrix) else matrix
        assembler = _transfer.DownloadAssembler()
        for chunk in self._stream("Download", _transfer.download_request(handle, rows), timeout):
            assembler.add(chunk)
        return assembler.array()

    def list_matrices(self, timeout: Optional[float] = None) -> List[RemoteMatrix]:
        """The server's resident matrices, oldest first (also those other clients made)."""
        response = self._invoke("ListMatrices", pb.ListMatricesRequest(), timeout)
        return [self._remote(info, track=False) for info in response.matrices]

    def release(self, matrix: RemoteMatrix, timeout: Optional[float] = None) -> int:
        """Frees a resident matrix now; returns the bytes freed. NotFound if already gone."""
        response = self._invoke("Release", pb.ReleaseRequest(handle=matrix.handle), timeout)
        self._forget(matrix)
        return response.bytes_freed

    def _release_quietly(self, matrix: RemoteMatrix) -> None:
        if matrix.released:
            return
        try:
            self.release(matrix)
        except errors.NotFound:
            self._forget(matrix)

    # ---- shared memory (same host) ----

    def shared_memory(self, size: int, name: Optional[str] = None) -> SharedMemoryRegion:
        """A new region of `size` bytes in /dev/shm, registered with the server; use it as a
        context manager (leaving it unregisters and removes it). Arrays placed in it
        (region.put(a), region.empty(shape)) are operands and outputs without gRPC copies."""
        return SharedMemoryRegion(self, size, name)

    def register_shared_memory(self, name: str, key: str, byte_size: int, offset: int = 0,
                               timeout: Optional[float] = None) -> results.SharedMemoryInfo:
        """Registers bytes [offset, offset + byte_size) of the shared-memory object `key`
        ("/name", a file under /dev/shm) as `name`. AlreadyExists, NotFound, InvalidArgument as
        the server says."""
        request = pb.RegisterSystemSharedMemoryRequest(name=name, key=key, offset=offset,
                                                       byte_size=byte_size)
        return _ops.shared_memory_info(
            self._invoke("RegisterSystemSharedMemory", request, timeout).region)

    def unregister_shared_memory(self, name: str = "", timeout: Optional[float] = None) -> int:
        """Unregisters `name` (every region for ""); returns how many. NotFound if unknown."""
        request = pb.UnregisterSystemSharedMemoryRequest(name=name)
        return self._invoke("UnregisterSystemSharedMemory", request, timeout).unregistered

    def register_cuda_shared_memory(self, name: str, raw_handle: bytes, device_id: int,
                                    byte_size: int, timeout: Optional[float] = None
                                    ) -> CudaSharedRegion:
        """Registers device memory of this process, shared by CUDA IPC handle, as `name`: the
        first byte_size bytes of the allocation `raw_handle` (the 64 bytes of a
        cudaIpcMemHandle_t) names, on CUDA device `device_id` as this process numbers it. Returns
        a CudaSharedRegion; region.matrix(offset, shape, dtype) refers to a matrix in it, an
        operand or an output used on the device in place. With cupy:

            cupy.cuda.set_allocator(None)      # each array its own allocation
            a = cupy.asarray(host_a); c = cupy.empty((n, n))
            cupy.cuda.runtime.deviceSynchronize()
            with client.register_cuda_shared_memory(
                    "a", cupy.cuda.runtime.ipcGetMemHandle(a.data.ptr), a.device.id,
                    a.nbytes) as ra, client.register_cuda_shared_memory(
                    "c", cupy.cuda.runtime.ipcGetMemHandle(c.data.ptr), c.device.id,
                    c.nbytes) as rc:
                client.multiply(ra.matrix(0, (n, n)), ra.matrix(0, (n, n)),
                                outputs={"c": rc.matrix(0, (n, n))})   # c = a @ a

        AlreadyExists for a name in use; InvalidArgument for a handle that is not 64 bytes, a
        device the server does not use or a handle the driver refuses; Unimplemented on a server
        without CUDA (see matrixd.cuda_shared_memory)."""
        request = pb.RegisterCudaSharedMemoryRequest(name=name, raw_handle=bytes(raw_handle),
                                                     device_id=device_id, byte_size=byte_size)
        self._invoke("RegisterCudaSharedMemory", request, timeout)
        return CudaSharedRegion(self, name, device_id, byte_size)

    def unregister_cuda_shared_memory(self, name: str = "",
                                      timeout: Optional[float] = None) -> int:
        """Unregisters the CUDA region `name` (every CUDA region for ""); returns how many.
        NotFound if unknown."""
        request = pb.UnregisterCudaSharedMemoryRequest(name=name)
        return self._invoke("UnregisterCudaSharedMemory", request, timeout).unregistered

    def list_shared_memory(self, timeout: Optional[float] = None
                           ) -> List[results.SharedMemoryInfo]:
        """The regions registered with the server, in name order (also other clients')."""
        response = self._invoke("ListSharedMemory", pb.ListSharedMemoryRequest(), timeout)
        return [_ops.shared_memory_info(region) for region in response.regions]

    # ---- lifetime ----

    def close(self) -> None:
        """Releases the resident matrices this client made, then closes the channel."""
        for matrix in list(self._resident.values()):
            try:
                self._release_quietly(matrix)
            except errors.MatrixdError:
                pass  # the channel is going away; the server's TTL frees it
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Job:
    """A submitted operation. progress() polls, watch() streams, wait() returns the result."""

    def __init__(self, client: Client, job_id: str, call: _ops.Call):
        self.client = client
        self.id = job_id
        self._call = call

    def progress(self, timeout: Optional[float] = None) -> results.JobStatus:
        """The job's state and progress now (GetJob)."""
        return _ops.job_status(self.client._invoke("GetJob", pb.JobId(job_id=self.id), timeout))

    def watch(self, timeout: Optional[float] = None) -> Iterator[results.JobStatus]:
        """Streams the job's updates until it finishes (the last one is done)."""
        for update in self._updates(timeout):
            yield _ops.job_status(update)

    def _updates(self, timeout: Optional[float]):
        return self.client._stream("Watch", pb.JobId(job_id=self.id), timeout)

    def wait(self, timeout: Optional[float] = None, progress: bool = False):
        """Blocks until the job finishes and returns its result (or raises its error).
        timeout: seconds to wait (DeadlineExceeded after; the job goes on). progress=True shows
        a progress bar (tqdm if installed, else a line on stderr)."""
        with _ops.JobFollower(self.id, self._call, progress) as follower:
            for update in self._updates(timeout):
                follower.see(update)
        return follower.result(self.client)

    def cancel(self, timeout: Optional[float] = None) -> results.JobStatus:
        """Asks the job to stop; the returned state may still be "running" for a moment."""
        return _ops.job_status(self.client._invoke("Cancel", pb.JobId(job_id=self.id), timeout))

    def __repr__(self):
        return f"<matrixd.Job {self.id} {self._call.job_field}>"


