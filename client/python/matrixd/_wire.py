"""numpy arrays to and from the wire's Matrix: packed little-endian row-major bytes.

An array goes out with one copy (ndarray.tobytes in C order, whatever the array's own order) and
comes back with none (np.frombuffer on the response's bytes: the result is read-only; .copy() it
to write). A 3-D array is a batch of matrices stacked vertically, as the proto's batch_count wants.
"""

from typing import Tuple

import numpy as np

from matrixd import errors
from matrixd.v1 import matrix_pb2, matrixd_pb2

# The wire's dtypes, little-endian.
DTYPES = {
    matrix_pb2.DTYPE_FLOAT32: np.dtype("<f4"),
    matrix_pb2.DTYPE_FLOAT64: np.dtype("<f8"),
    matrix_pb2.DTYPE_COMPLEX64: np.dtype("<c8"),
    matrix_pb2.DTYPE_COMPLEX128: np.dtype("<c16"),
    matrix_pb2.DTYPE_INT64: np.dtype("<i8"),
    matrix_pb2.DTYPE_UINT32: np.dtype("<u4"),
}
_WIRE = {dtype: wire for wire, dtype in DTYPES.items()}
# The server's names, for messages that match its own (core/matrix.cc DTypeName).
NAMES = {wire: dtype.name for wire, dtype in DTYPES.items()}


def wire_dtype(dtype) -> int:
    """The DType value for a numpy dtype of the six the wire has (any byte order)."""
    wire = _WIRE.get(np.dtype(dtype).newbyteorder("<"))
    if wire is None:
        raise errors.InvalidArgument(
            f"dtype {np.dtype(dtype)} is not one of float32, float64, complex64, complex128, "
            "int64, uint32")
    return wire


LAYOUTS = {
    "single": matrixd_pb2.RESIDENT_LAYOUT_SINGLE_DEVICE,
    "distributed": matrixd_pb2.RESIDENT_LAYOUT_DISTRIBUTED,
}
LAYOUT_NAMES = {wire: name for name, wire in LAYOUTS.items()}
GENERATORS = {
    "random": matrixd_pb2.GENERATOR_RANDOM,
    "identity": matrixd_pb2.GENERATOR_IDENTITY,
    "hilbert": matrixd_pb2.GENERATOR_HILBERT,
}


def wire_choice(value: str, choices: dict, field: str) -> int:
    """The enum value of `value` among `choices` (e.g. LAYOUTS), or InvalidArgument naming field."""
    wire = choices.get(value)
    if wire is None:
        raise errors.InvalidArgument(
            f"{field} is {value!r}; want one of {', '.join(sorted(choices))}")
    return wire


def as_wire_array(a, field: str) -> np.ndarray:
    """`a` as an ndarray of a wire dtype: lists and lossless integer/bool/float16 inputs convert."""
    a = np.asarray(a)
    kind = a.dtype.kind
    if kind == "b" or (kind in "iu" and a.dtype.itemsize < 8 and a.dtype != np.uint32):
        a = a.astype(np.int64)
    elif a.dtype == np.float16:
        a = a.astype(np.float32)
    if a.ndim not in (2, 3):
        raise errors.InvalidArgument(f"{field} has {a.ndim} dimensions; want 2 (or 3 for a batch)")
    try:
        wire_dtype(a.dtype)
    except errors.InvalidArgument as e:
        raise errors.InvalidArgument(f"{field}.{e.message}") from None
    return a


def little_endian(a: np.ndarray) -> np.ndarray:
    return a if a.dtype.byteorder != ">" else a.astype(a.dtype.newbyteorder("<"))


def to_matrix(a: np.ndarray) -> Tuple[matrix_pb2.Matrix, int]:
    """The Matrix of a 2-D array, or of a 3-D batch stacked vertically; and the batch count."""
    a = little_endian(a)
    batch = a.shape[0] if a.ndim == 3 else 0
    rows = a.shape[0] * a.shape[1] if a.ndim == 3 else a.shape[0]
    return matrix_pb2.Matrix(rows=rows, cols=a.shape[-1], dtype=wire_dtype(a.dtype),
                             data=a.tobytes(order="C")), batch


def from_bytes(data, rows: int, cols: int, wire: int, batch: int = 0) -> np.ndarray:
    """A read-only array over `data` (no copy); (batch, rows/batch, cols) when batch > 0."""
    array = np.frombuffer(data, dtype=DTYPES[wire])
    if batch > 0:
        return array.reshape(batch, rows // batch, cols)
    return array.reshape(rows, cols)


def from_matrix(m: matrix_pb2.Matrix, batch: int = 0) -> np.ndarray:
    return from_bytes(m.data, m.rows, m.cols, m.dtype, batch)
