"""Requests, checks and result parsers shared by matrixd.Client and matrixd.aio.Client.

Each operation is built here as a Call: the RPC's name, the request (checked first, with the
server's own messages, so a bad shape fails before any bytes move) and the function that turns
the response into a result. The two clients only send it.
"""

import dataclasses
from typing import Any, Callable, Optional

import numpy as np

from matrixd import _progress, _wire, errors, results
from matrixd.remote import RemoteFactorization, RemoteMatrix
from matrixd.shared_memory import SharedMatrix
from matrixd.v1 import matrix_pb2, matrixd_pb2

pb = matrixd_pb2

DET_METHODS = {"auto": pb.DETERMINANT_METHOD_AUTO, "lu": pb.DETERMINANT_METHOD_LU,
               "condensation": pb.DETERMINANT_METHOD_CONDENSATION}
PERMANENT_METHODS = {"auto": pb.PERMANENT_METHOD_AUTO, "ryser": pb.PERMANENT_METHOD_RYSER,
                     "glynn": pb.PERMANENT_METHOD_GLYNN}
PERMANENT_PRECISIONS = {"extended": pb.PERMANENT_PRECISION_EXTENDED,
                       "fast": pb.PERMANENT_PRECISION_FAST}
PERMANENT_WALKS = {"auto": pb.PERMANENT_WALK_AUTO, "dense": pb.PERMANENT_WALK_DENSE,
                   "sparse": pb.PERMANENT_WALK_SPARSE}
KINDS = {"lu": pb.FACTORIZATION_KIND_LU, "cholesky": pb.FACTORIZATION_KIND_CHOLESKY,
         "qr": pb.FACTORIZATION_KIND_QR}
REFINE_PRECISIONS = {"input": pb.REFINE_PRECISION_UNSPECIFIED,
                     "float32": pb.REFINE_PRECISION_FLOAT32, "tf32": pb.REFINE_PRECISION_TF32,
                     "float16": pb.REFINE_PRECISION_FLOAT16}
TRANSPOSES = {"N": pb.SOLVE_TRANSPOSE_NONE, "T": pb.SOLVE_TRANSPOSE_TRANSPOSE,
              "C": pb.SOLVE_TRANSPOSE_CONJUGATE}
JOB_STATES = {pb.JOB_STATE_QUEUED: "queued", pb.JOB_STATE_RUNNING: "running",
              pb.JOB_STATE_SUCCEEDED: "succeeded", pb.JOB_STATE_FAILED: "failed",
              pb.JOB_STATE_CANCELLED: "cancelled"}
_FLOATING = (matrix_pb2.DTYPE_FLOAT32, matrix_pb2.DTYPE_FLOAT64, matrix_pb2.DTYPE_COMPLEX64,
             matrix_pb2.DTYPE_COMPLEX128)
_COMPLEX = (matrix_pb2.DTYPE_COMPLEX64, matrix_pb2.DTYPE_COMPLEX128)
_MODULUS_LIMIT = 1 << 62


@dataclasses.dataclass
class Call:
    """One request ready to send: rpc is the stub's method, job_field its JobRequest field."""
    rpc: str
    request: Any
    parse: Callable[[Any, Any], Any]  # (response, client) -> result
    job_field: str = ""


def _choice(table: dict, value, field: str) -> int:
    key = value.upper() if table is TRANSPOSES and isinstance(value, str) else value
    if key not in table:
        raise errors.InvalidArgument(f"{field} is {value!r}; want one of {', '.join(table)}")
    return table[key]


class Operand:
    """An operation's input: an array (sent inline), a RemoteMatrix (sent by handle) or a
    SharedMatrix (sent as a reference into its registered region)."""

    def __init__(self, x, field: str, allow_batch: bool = False):
        self.field = field
        self.array = None
        self.remote = None
        self.shared = None
        if isinstance(x, SharedMatrix):
            if x.region.closed:
                raise errors.InvalidArgument(
                    f"{field}_ref: shared-memory region {x.region.name} was closed")
            if x.batch and not allow_batch:
                raise errors.InvalidArgument(
                    f"{field} has 3 dimensions; only factorizations take a batch")
            self.shared = x
            self.batch = x.batch
            self.rows, self.cols = x.shape[-2:]
            self.wire = x.wire
            return
        if isinstance(x, RemoteMatrix):
            if x.released:
                raise errors.InvalidArgument(f"{field}_ref: resident matrix {x.handle} was released")
            self.remote = x
            self.rows, self.cols = x.shape
            self.wire = x.wire_dtype
            self.batch = 0
            return
        self.array = _wire.as_wire_array(x, field)
        if self.array.ndim == 3 and not allow_batch:
            raise errors.InvalidArgument(
                f"{field} has 3 dimensions; only factorizations take a batch")
        self.batch = self.array.shape[0] if self.array.ndim == 3 else 0
        self.rows, self.cols = self.array.shape[-2:]
        self.wire = _wire.wire_dtype(self.array.dtype)
        if self.rows <= 0 or self.cols <= 0 or (self.array.ndim == 3 and self.batch <= 0):
            raise errors.InvalidArgument(f"{field} has shape {self.rows}x{self.cols}; "
                                         "rows and cols must be >= 1")

    @property
    def dtype_name(self) -> str:
        return _wire.NAMES[self.wire]

    @property
    def is_complex(self) -> bool:
        return self.wire in _COMPLEX

    def put(self, request, name: Optional[str] = None) -> None:
        """Fills request.<name> (inline, one copy of the bytes) or request.<name>_ref."""
        name = name or self.field
        if self.shared is not None:
            getattr(request, f"{name}_ref").shared_memory.CopyFrom(self.shared.shared_memory_ref())
            return
        if self.remote is not None:
            getattr(request, f"{name}_ref").handle = self.remote.handle
            return
        a = _wire.little_endian(self.array)
        target = getattr(request, name)
        target.rows = self.rows * max(self.batch, 1)
        target.cols = self.cols
        target.dtype = self.wire
        target.data = a.tobytes(order="C")

    def require_square(self, what: Optional[str] = None) -> None:
        if self.rows != self.cols:
            raise errors.InvalidArgument(
                f"{what or self.field} must be square, got {self.rows}x{self.cols}")

    def require_dtype(self, allowed, wanted: str) -> None:
        if self.wire not in allowed:
            raise errors.InvalidArgument(f"{self.field}.dtype is {self.dtype_name}; want {wanted}")


def is_prime(n: int) -> bool:
    """Deterministic Miller-Rabin for n < 3.3e24 (enough for moduli below 2^62)."""
    if n < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    if n in small:
        return True
    if any(n % p == 0 for p in small):
        return False
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in small:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def stats(s) -> results.Stats:
    return results.Stats(s.backend, s.device, s.seconds, s.bytes_moved, s.flops,
                         algorithm=s.algorithm, precision=s.precision,
                         versions=dict(s.versions), result_crc32c=s.result_crc32c)


def _int_or_none(text: str) -> Optional[int]:
    return int(text) if text else None


def _result_options(request, keep: bool, also_inline: bool = False,
                    outputs: Optional[dict] = None) -> None:
    if keep:
        request.result_options.keep_result = True
        request.result_options.also_inline = also_inline
    for name, target in (outputs or {}).items():
        if not isinstance(target, SharedMatrix):
            raise errors.InvalidArgument(
                f"outputs[{name!r}] is a {type(target).__name__}; want a SharedMatrix")
        if keep:
            raise errors.InvalidArgument(
                "outputs and keep=True: results go into shared memory or stay on the server")
        request.result_options.shared_memory_outputs[name].CopyFrom(target.shared_memory_ref())


def _kept(response, client) -> dict:
    """The response's kept matrices as RemoteMatrix objects (one object per handle)."""
    by_handle = {}
    # The factorization first: its handle is also "lu" ("l", "q"), and that object should solve.
    names = sorted(response.kept, key=lambda name: name != "factorization")
    return {name: by_handle.setdefault(response.kept[name].handle,
                                       client._remote(response.kept[name]))
            for name in names}


def _matrix_or_kept(response, name: str, kept: dict, batch: int = 0, vector: bool = False,
                    outputs: Optional[dict] = None):
    if outputs and name in outputs:  # written into shared memory: its view
        array = outputs[name].array
        if array is None:  # a CUDA region: the caller reads its own device memory
            return outputs[name]
        return array[..., 0] if vector else array
    if name in kept and not response.HasField(name):
        return kept[name]
    if not response.HasField(name):
        return None
    array = _wire.from_matrix(getattr(response, name), batch)
    return array[..., 0] if vector else array


def determinant(a, method="auto", modulus: int = 0, check: bool = True,
                return_residues: bool = False, deterministic: bool = False) -> Call:
    op = Operand(a, "matrix")
    modulus = int(modulus)
    if check:
        op.require_square()
        if modulus == 1 or modulus >= _MODULUS_LIMIT or (modulus > 1 and not is_prime(modulus)):
            raise errors.InvalidArgument(f"modulus {modulus} must be 0 or a prime below 2^62")
        if modulus > 0:
            op.require_dtype((matrix_pb2.DTYPE_INT64,), "int64 when modulus > 0")
        else:
            op.require_dtype(_FLOATING + (matrix_pb2.DTYPE_INT64,),
                             "float32, float64, complex64, complex128 or int64")
    request = pb.DeterminantRequest(method=_choice(DET_METHODS, method, "method"), modulus=modulus,
                                    return_residues=return_residues, deterministic=deterministic)
    op.put(request, "matrix")
    complex_input = op.is_complex

    def parse(r, client):
        if complex_input:
            sign = complex(r.phase_re, r.phase_im)
            mantissa = complex(r.mantissa, r.mantissa_imag)
            value = complex(r.value, r.value_imag)
        else:
            sign, mantissa, value = r.sign, r.mantissa, r.value
        return results.Determinant(
            sign=sign, log_abs=r.log_abs, mantissa=mantissa, exponent10=r.exponent10,
            value=value, singular=r.singular,
            method=pb.DeterminantMethod.Name(r.method_used)[len("DETERMINANT_METHOD_"):].lower(),
            stats=stats(r.stats), exact=_int_or_none(r.exact),
            residue=r.residue if modulus > 0 else None,
            accuracy=_accuracy(r) if r.HasField("accuracy") else None,
            certificate=_certificate(r) if r.HasField("certificate") else None)

    return Call("Determinant", request, parse, "determinant")


def _certificate(r) -> results.ExactCertificate:
    c = r.certificate
    return results.ExactCertificate(
        method=c.method, primes=list(c.primes), residues=list(c.residues) or None,
        bound_bits=c.bound_bits, covered_bits=c.covered_bits, early_stop=c.early_stop,
        error_probability=c.error_probability)


def _product_check(r) -> results.ProductCheck:
    c = r.check
    return results.ProductCheck(discrepancy=c.discrepancy, tolerance=c.tolerance,
                                passed=c.passed, vectors=c.vectors, seed=c.seed)


def _refinement(r) -> results.Refinement:
    f = r.refinement
    return results.Refinement(iterations=f.iterations, backward_error=f.backward_error,
                              converged=f.converged, factor_precision=f.factor_precision,
                              fell_back=f.fell_back, threshold=f.threshold)


def _accuracy(r) -> results.Accuracy:
    a = r.accuracy
    return results.Accuracy(rcond=a.rcond, relative_error_bound=a.relative_error_bound,
                            meaningful_digits=a.meaningful_digits,
                            ill_conditioned=a.ill_conditioned)


def factorize(a, kind="lu", rhs=None, keep=False, keep_input=False, check=True,
              outputs: Optional[dict] = None, estimate_condition=False, refine: bool = False,
              refine_precision: str = "input", refine_max_iterations: int = 0,
              deterministic: bool = False, devices: int = 0) -> Call:
    op = Operand(a, "matrix", allow_batch=True)
    kind_value = _choice(KINDS, kind, "kind")
    rhs_op, vector = None, False
    if rhs is not None and not isinstance(rhs, (RemoteMatrix, SharedMatrix)):
        rhs = np.asarray(rhs)
        vector = rhs.ndim == 1 or (rhs.ndim == 2 and op.batch > 0)
        if vector:
            rhs = rhs[..., np.newaxis]
    if rhs is not None:
        rhs_op = Operand(rhs, "rhs", allow_batch=True)
    if check:
        _check_factorize(op, kind, rhs_op, estimate_condition)
        if refine and (kind != "lu" or rhs_op is None or op.batch):
            raise errors.InvalidArgument(
                "refine is set; refinement refines an LU solve of one matrix (kind 'lu', rhs)")
    request = pb.FactorizeRequest(
        kind=kind_value, batch_count=op.batch, keep_input=keep_input,
        estimate_condition=estimate_condition, refine=refine,
        refine_factor_precision=_choice(REFINE_PRECISIONS, refine_precision, "refine_precision"),
        refine_max_iterations=refine_max_iterations, deterministic=deterministic,
        devices=devices)
    op.put(request, "matrix")
    if rhs_op is not None:
        rhs_op.put(request, "rhs")
    _result_options(request, keep, outputs=outputs)
    batch = op.batch

    def parse(r, client):
        kept = _kept(r, client)
        if outputs and "permutation" in outputs:  # written into shared memory
            permutation = outputs["permutation"].array.reshape(-1)
        else:
            permutation = np.array(r.permutation, dtype=np.int64)
        if batch and permutation.size:
            permutation = permutation.reshape(batch, -1)
        return results.Factorization(
            kind=kind, stats=stats(r.stats),
            lu=_matrix_or_kept(r, "lu", kept, batch, outputs=outputs),
            permutation=permutation if permutation.size else None,
            singular=r.singular, singular_column=r.singular_column,
            singular_columns=(outputs["singular_columns"].array.reshape(-1)
                              if outputs and "singular_columns" in outputs
                              else np.array(r.singular_columns, dtype=np.int64)
                              if batch else None),
            l=_matrix_or_kept(r, "l", kept, batch, outputs=outputs),
            q=_matrix_or_kept(r, "q", kept, batch, outputs=outputs),
            r=_matrix_or_kept(r, "r", kept, batch, outputs=outputs),
            solution=_matrix_or_kept(r, "solution", kept, batch, vector, outputs),
            factorization=kept.get("factorization"), kept=kept,
            accuracy=_accuracy(r) if r.HasField("accuracy") else None,
            refinement=_refinement(r) if r.HasField("refinement") else None)

    return Call("Factorize", request, parse, "factorize")


def _check_factorize(op: Operand, kind: str, rhs: Optional[Operand],
                     estimate_condition: bool = False) -> None:
    op.require_dtype(_FLOATING, "float32, float64, complex64 or complex128")
    each = "each matrix of the batch" if op.batch else "matrix"
    if estimate_condition and op.batch:
        raise errors.InvalidArgument(
            f"estimate_condition is set with batch_count = {op.batch}; condition estimates are "
            "for one matrix (batch_count 0)")
    if estimate_condition and kind == "lu" and op.rows != op.cols:
        raise errors.InvalidArgument(
            f"estimate_condition needs a square matrix for LU, got {op.rows}x{op.cols}")
    if kind == "cholesky" or (op.batch and kind == "lu"):
        op.require_square(each)
    if rhs is None:
        return
    if kind == "lu":
        op.require_square(each)
    if kind == "qr" and op.rows < op.cols:
        raise errors.InvalidArgument(
            f"{each} is {op.rows}x{op.cols}; a QR solve needs rows >= cols (least squares)")
    if rhs.wire != op.wire:
        raise errors.InvalidArgument(
            f"rhs.dtype is {rhs.dtype_name}; want matrix.dtype {op.dtype_name}")
    if rhs.batch != op.batch or rhs.rows != op.rows:
        total, rhs_total = op.rows * max(op.batch, 1), rhs.rows * max(rhs.batch, 1)
        raise errors.InvalidArgument(f"rhs has {rhs_total} rows; want matrix.rows = {total}")


def shared_memory_info(region) -> results.SharedMemoryInfo:
    kind = "cuda" if region.kind == pb.SHARED_MEMORY_KIND_CUDA else "system"
    return results.SharedMemoryInfo(region.name, region.key, region.offset, region.byte_size,
                                    region.pinned, region.age_seconds, kind,
                                    region.device_id if kind == "cuda" else None)


def solve(factorization: RemoteFactorization, b, transpose="N", residual=False, keep=False,
          check=True, outputs: Optional[dict] = None, deterministic: bool = False) -> Call:
    """Solve with a kept factorization."""
    vector = not isinstance(b, (RemoteMatrix, SharedMatrix)) and np.ndim(b) == 1
    rhs = Operand(np.asarray(b)[:, np.newaxis] if vector else b, "rhs")
    if check and rhs.rows != factorization.shape[0]:
        raise errors.InvalidArgument(
            f"rhs has {rhs.rows} rows; want the factorization's {factorization.shape[0]}")
    request = pb.SolveRequest(transpose=_choice(TRANSPOSES, transpose, "transpose"),
                              residual=residual, deterministic=deterministic)
    request.factorization.handle = factorization.handle
    rhs.put(request, "rhs")
    _result_options(request, keep, outputs=outputs)

    def parse(r, client):
        kept = _kept(r, client)
        return results.Solution(
            x=_matrix_or_kept(r, "solution", kept, vector=vector, outputs=outputs),
            stats=stats(r.stats),
            kind=pb.FactorizationKind.Name(r.kind)[len("FACTORIZATION_KIND_"):].lower(),
            residual=r.residual if r.HasField("residual") else None)

    return Call("Solve", request, parse, "solve")


def solve_inline(a, b, kind="lu", check=True, outputs: Optional[dict] = None) -> Call:
    """Solve by Factorize with a right-hand side; the result is a Solution."""
    call = factorize(a, kind=kind, rhs=b, check=check, outputs=outputs)
    factorization_parse = call.parse

    def parse(r, client):
        f = factorization_parse(r, client)
        return results.Solution(x=f.solution, stats=f.stats, kind=kind)

    return Call(call.rpc, call.request, parse, call.job_field)


def multiply(a, b, transpose_a=False, transpose_b=False, block_size=0, allow_tf32=False,
             keep=False, check=True, outputs: Optional[dict] = None, verify=False,
             deterministic: bool = False) -> Call:
    a_op, b_op = Operand(a, "a"), Operand(b, "b")
    if check:
        a_op.require_dtype(_FLOATING + (matrix_pb2.DTYPE_UINT32,),
                           "float32, float64, complex64, complex128 or uint32")
        if b_op.wire != a_op.wire:
            raise errors.InvalidArgument(
                f"b.dtype is {b_op.dtype_name}; want a.dtype {a_op.dtype_name}")
        ar, ac = (a_op.cols, a_op.rows) if transpose_a else (a_op.rows, a_op.cols)
        br, bc = (b_op.cols, b_op.rows) if transpose_b else (b_op.rows, b_op.cols)
        if ac != br:
            raise errors.InvalidArgument(
                f"op(a) is {ar}x{ac} and op(b) is {br}x{bc}; inner dimensions must agree")
        if block_size < 0:
            raise errors.InvalidArgument(f"block_size is {block_size}; want 0 (dense) or > 0")
        if deterministic and allow_tf32:
            raise errors.InvalidArgument(
                "allow_tf32 is set with deterministic; a deterministic product runs in the "
                "operands' precision")
        if verify and a_op.wire not in _FLOATING:
            raise errors.InvalidArgument(
                f"verify is set but a.dtype is {a_op.dtype_name}; Freivalds' check takes "
                "float32, float64, complex64 or complex128")
    request = pb.MultiplyRequest(transpose_a=transpose_a, transpose_b=transpose_b,
                                 block_size=block_size, allow_tf32=allow_tf32, verify=verify,
                                 deterministic=deterministic)
    a_op.put(request, "a")
    b_op.put(request, "b")
    _result_options(request, keep, outputs=outputs)

    def parse(r, client):
        kept = _kept(r, client)
        return results.Product(c=_matrix_or_kept(r, "c", kept, outputs=outputs),
                               stats=stats(r.stats),
                               block_products=r.block_products,
                               block_products_total=r.block_products_total,
                               check=_product_check(r) if r.HasField("check") else None)

    return Call("Multiply", request, parse, "multiply")


def permanent(a, method="auto", check=True, precision="extended", walk="auto",
              return_residues=False, deterministic: bool = False) -> Call:
    op = Operand(a, "matrix")
    if check:
        op.require_square()
        op.require_dtype(_FLOATING + (matrix_pb2.DTYPE_INT64,),
                         "float32, float64, complex64, complex128 or int64")
    request = pb.PermanentRequest(
        method=_choice(PERMANENT_METHODS, method, "method"),
        precision=_choice(PERMANENT_PRECISIONS, precision, "precision"),
        walk=_choice(PERMANENT_WALKS, walk, "walk"),
        return_residues=return_residues, deterministic=deterministic)
    op.put(request, "matrix")
    complex_input = op.is_complex

    def parse(r, client):
        return results.Permanent(
            value=complex(r.value, r.imag) if complex_input else r.value,
            method=pb.PermanentMethod.Name(r.method_used)[len("PERMANENT_METHOD_"):].lower(),
            stats=stats(r.stats), exact=_int_or_none(r.exact),
            precision=pb.PermanentPrecision.Name(
                r.precision_used)[len("PERMANENT_PRECISION_"):].lower(),
            walk=pb.PermanentWalk.Name(r.walk_used)[len("PERMANENT_WALK_"):].lower(),
            certificate=_certificate(r) if r.HasField("certificate") else None)

    return Call("Permanent", request, parse, "permanent")


_JOB_OPERATIONS = {
    "det": determinant, "determinant": determinant, "factorize": factorize,
    "lu": lambda a, rhs=None, **kw: factorize(a, "lu", rhs, **kw),
    "cholesky": lambda a, rhs=None, **kw: factorize(a, "cholesky", rhs, **kw),
    "qr": lambda a, rhs=None, **kw: factorize(a, "qr", rhs, **kw),
    "multiply": multiply, "permanent": permanent, "solve": solve,
}


def job_call(operation: str, args: tuple, kwargs: dict, check: bool) -> Call:
    """The Call of Client.submit(operation, *args, **kwargs)."""
    builder = _JOB_OPERATIONS.get(operation)
    if builder is None:
        raise errors.InvalidArgument(
            f"operation is {operation!r}; want one of {', '.join(_JOB_OPERATIONS)}")
    return builder(*args, check=check, **kwargs)


def job_request(call: Call, timeout_seconds: Optional[float]) -> pb.JobRequest:
    if not call.job_field:
        raise errors.InvalidArgument(f"{call.rpc} cannot be submitted as a job")
    request = pb.JobRequest(timeout_seconds=timeout_seconds or 0)
    getattr(request, call.job_field).CopyFrom(call.request)
    return request


def job_status(update: pb.JobUpdate) -> results.JobStatus:
    return results.JobStatus(update.job_id, JOB_STATES.get(update.state, "unspecified"),
                             update.progress, update.eta_seconds, update.queued_seconds,
                             update.running_seconds)


class JobFollower:
    """Follows a job's Watch updates (with a progress bar when asked, closed on leaving its
    `with` block) to its result."""

    def __init__(self, job_id: str, call: Call, progress: bool):
        self._job_id = job_id
        self._call = call
        self._bar = _progress.bar(job_id) if progress else None
        self._last = None

    def see(self, update: pb.JobUpdate) -> None:
        self._last = update
        if self._bar:
            self._bar.update(job_status(update))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._bar:
            self._bar.close()

    def result(self, client):
        """The finished job's result, or its error raised."""
        if self._last is None:
            raise errors.Unknown(f"job {self._job_id}: Watch ended without an update")
        return job_result(self._last, self._call, client)


def job_result(update: pb.JobUpdate, call: Call, client):
    """The finished job's result, or its error raised as the synchronous call would."""
    if update.state == pb.JOB_STATE_SUCCEEDED:
        return call.parse(getattr(update, call.job_field), client)
    if update.state in (pb.JOB_STATE_FAILED, pb.JOB_STATE_CANCELLED):
        code = update.error.code or (1 if update.state == pb.JOB_STATE_CANCELLED else 2)
        raise errors.error_for_value(code, update.error.message or JOB_STATES[update.state])
    raise errors.FailedPrecondition(f"job {update.job_id} has not finished")
