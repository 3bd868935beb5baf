"""What the operations return: small dataclasses of numpy arrays and Python numbers.

Matrices are read-only numpy arrays over the response's bytes, or RemoteMatrix handles when the
operation was asked to keep its results (keep=True). Exact values (integer determinants and
permanents, residues mod p) are Python ints.
"""

import dataclasses
from typing import Dict, Optional, Union

import numpy as np


@dataclasses.dataclass(frozen=True)
class Stats:
    """How the server computed a result (ComputeStats), with its provenance: the kernels that ran
    (`algorithm`), the arithmetic (`precision`), the device/driver/library `versions` and the
    CRC32C of the response's result fields as hex (`result_crc32c`; docs/accuracy.md)."""
    backend: str
    device: str
    seconds: float
    bytes_moved: int
    flops: float
    algorithm: str = ""
    precision: str = ""
    versions: Optional[Dict[str, str]] = None
    result_crc32c: str = ""


@dataclasses.dataclass(frozen=True)
class Determinant:
    """det(A) in a form that never overflows: det = mantissa * 10**exponent10.

    Real input: sign is -1.0, 0.0 or 1.0 and value, mantissa are floats. Complex input: sign is the
    unit phase det/|det| and value, mantissa are complex. log_abs is ln|det| (-inf when singular).
    `exact` is the exact integer determinant (INT64 input, modulus 0, when the server affords it),
    `residue` det mod p (modulus p > 0); otherwise None. `accuracy` (LU over R/C on backends that
    estimate it, else None) bounds the relative error of `value` (docs/accuracy.md). `certificate`
    says how `residue` or `exact` was obtained (else None).
    """
    sign: Union[float, complex]
    log_abs: float
    mantissa: Union[float, complex]
    exponent10: int
    value: Union[float, complex]
    singular: bool
    method: str
    stats: Stats
    exact: Optional[int] = None
    residue: Optional[int] = None
    accuracy: Optional["Accuracy"] = None
    certificate: Optional["ExactCertificate"] = None


@dataclasses.dataclass(frozen=True)
class ExactCertificate:
    """How an exact answer was obtained (docs/accuracy.md): the method, the primes, the residues
    mod each (with return_residues=True, else None), log2 of the bound on |answer| the primes had
    to cover and of what they cover, and whether an early stop was taken (with what probability of
    a wrong answer)."""
    method: str
    primes: list
    residues: Optional[list]
    bound_bits: float
    covered_bits: float
    early_stop: bool
    error_probability: float


@dataclasses.dataclass(frozen=True)
class Accuracy:
    """How far a floating-point result can be trusted: reciprocal condition estimate, estimated
    bound on the relative error, the digits that bound leaves, and whether under half remain."""
    rcond: float
    relative_error_bound: float
    meaningful_digits: float
    ill_conditioned: bool


@dataclasses.dataclass(frozen=True)
class Factorization:
    """Factorize's result. Fields the kind does not produce are None.

    LU: `lu` holds LAPACK's packed factors and `permutation` satisfies
    a[permutation] == L @ U (0-based). Cholesky: `l` with a == l @ l.conj().T. QR: `q`, `r`.
    `solution` solves a @ x = rhs when rhs was given. A batch (3-D input) gives 3-D arrays and a
    (batch, n) permutation. With keep=True the matrices are RemoteMatrix handles and
    `factorization` is the handle Solve takes. `accuracy` (with estimate_condition=True, else
    None): rcond of the matrix and the relative error bound of a solve (docs/accuracy.md).
    """
    kind: str
    stats: Stats
    lu: Optional[object] = None
    permutation: Optional[np.ndarray] = None
    singular: bool = False
    singular_column: int = -1
    singular_columns: Optional[np.ndarray] = None
    l: Optional[object] = None  # noqa: E741 - the factor's name
    q: Optional[object] = None
    r: Optional[object] = None
    solution: Optional[object] = None
    factorization: Optional[object] = None
    kept: Dict[str, object] = dataclasses.field(default_factory=dict)
    accuracy: Optional["Accuracy"] = None
    refinement: Optional["Refinement"] = None


@dataclasses.dataclass(frozen=True)
class Refinement:
    """What refine=True did (docs/accuracy.md, "Iterative refinement"): correction steps taken,
    the backward error ||A X - B|| / (||A|| ||X|| + ||B||) (inf-norms) of the returned X, whether
    it reached `threshold`, the precision the factorization ran in and whether the
    low-precision path fell back to a full-precision factorization."""
    iterations: int
    backward_error: float
    converged: bool
    factor_precision: str
    fell_back: bool
    threshold: float


@dataclasses.dataclass(frozen=True)
class Solution:
    """x with op(A) x = b; `residual` when asked for (Solve with a kept factorization)."""
    x: object
    stats: Stats
    kind: str = "lu"
    residual: Optional[float] = None


@dataclasses.dataclass(frozen=True)
class Product:
    """C = op(A) @ op(B): an array, or a RemoteMatrix with keep=True. `check` is Freivalds'
    verdict on C with verify=True, else None."""
    c: object
    stats: Stats
    block_products: int = 0
    block_products_total: int = 0
    check: Optional["ProductCheck"] = None


@dataclasses.dataclass(frozen=True)
class ProductCheck:
    """Freivalds' check of C (docs/accuracy.md): the largest scale-free discrepancy
    ||A(B x) - C x|| / (||A||_F ||B||_F ||x||) over `vectors` random +-1 vectors x, the tolerance
    2 (k + n) u it is held to (twice for complex), and whether it passed."""
    discrepancy: float
    tolerance: float
    passed: bool
    vectors: int
    seed: int


@dataclasses.dataclass(frozen=True)
class Permanent:
    """per(A): `value` (float, or complex for complex input) and `exact` (int) for INT64 input,
    with its `certificate`; `precision` the walk's arithmetic ("extended", "fast", "exact" for
    INT64 input) and `walk` "dense" or "sparse"."""
    value: Union[float, complex]
    method: str
    stats: Stats
    exact: Optional[int] = None
    precision: str = "extended"
    walk: str = "dense"
    certificate: Optional[ExactCertificate] = None


@dataclasses.dataclass(frozen=True)
class JobStatus:
    """One update of a job: its state ("queued", "running", "succeeded", "failed", "cancelled"),
    progress in [0, 1], estimated seconds left (-1 unknown) and times so far."""
    job_id: str
    state: str
    progress: float
    eta_seconds: float
    queued_seconds: float
    running_seconds: float

    @property
    def done(self) -> bool:
        return self.state in ("succeeded", "failed", "cancelled")


@dataclasses.dataclass(frozen=True)
class SharedMemoryInfo:
    """A shared-memory region registered with the server (ListSharedMemory)."""
    name: str
    key: str  # the shm_open name: the file /dev/shm<key>
    offset: int
    byte_size: int
    pinned: bool  # page-locked for the GPU
    age_seconds: float
    kind: str = "system"  # or "cuda" (register_cuda_shared_memory)
    device_id: Optional[int] = None  # a CUDA region's device, as its client numbers it
