"""matrixd: numpy in, numpy out, computed by a matrixd server.

    import numpy as np, matrixd
    with matrixd.Client("localhost:50051") as client:
        d = client.det(np.random.rand(100, 100))         # d.value, d.log_abs, d.mantissa, ...
        x = client.solve(a, b).x
        with client.upload(big) as remote:                # kept on the server
            c = client.multiply(remote, remote, keep=True).c   # a RemoteMatrix
            array = c.download()

Same host: client.shared_memory(size) makes a registered /dev/shm region; arrays placed in it
(region.put(a), region.empty(shape)) are sent by reference and results written into them
(outputs={"c": ...}). Device arrays (cupy, torch) are shared the same way by CUDA IPC handle:
client.register_cuda_shared_memory(name, handle, device_id, nbytes).

matrixd.aio.Client is the same client on asyncio.
"""

from matrixd.client import Client, Job
from matrixd.errors import (Aborted, AlreadyExists, Cancelled, DataLoss, DeadlineExceeded,
                            FailedPrecondition, Internal, InvalidArgument, MatrixdError,
                            NotFound, OutOfRange, PermissionDenied, ResourceExhausted,
                            Unauthenticated, Unavailable, Unimplemented, Unknown)
from matrixd.remote import RemoteFactorization, RemoteMatrix
from matrixd.results import (Determinant, ExactCertificate, Factorization, JobStatus, Permanent,
                             Product, ProductCheck, Refinement, SharedMemoryInfo, Solution,
                             Stats)
from matrixd.cuda_shared_memory import CudaSharedMatrix, CudaSharedRegion
from matrixd.shared_memory import SharedMatrix, SharedMemoryRegion

__version__ = "0.1.0"
__all__ = [
    "Client", "Job", "RemoteMatrix", "RemoteFactorization", "SharedMatrix", "SharedMemoryRegion",
    "SharedMemoryInfo", "CudaSharedRegion", "CudaSharedMatrix",
    "Determinant", "ExactCertificate", "Factorization", "JobStatus", "Permanent", "Product",
    "ProductCheck", "Refinement", "Solution", "Stats",
    "MatrixdError", "Aborted", "AlreadyExists", "Cancelled", "DataLoss", "DeadlineExceeded",
    "FailedPrecondition", "Internal", "InvalidArgument", "NotFound", "OutOfRange",
    "PermissionDenied", "ResourceExhausted", "Unauthenticated", "Unavailable", "Unimplemented",
    "Unknown",
]
