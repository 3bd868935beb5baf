"""Errors: refused before sending with the server's own messages, and mapped from status codes."""

import grpc
import numpy as np
import pytest

import matrixd
from matrixd import errors


@pytest.fixture
def unchecked(server):
    """A client that sends everything, so that the server's answer is what is tested."""
    with matrixd.Client(server, timeout=60, check=False) as c:
        yield c


# (call, the message both the client's check and the server give)
REFUSALS = [
    (lambda c: c.det(np.ones((3, 4))), "matrix must be square, got 3x4"),
    (lambda c: c.det(np.ones((3, 3), dtype=np.uint32)),
     "matrix.dtype is uint32; want float32, float64, complex64, complex128 or int64"),
    (lambda c: c.det(np.eye(3, dtype=np.int64), modulus=4),
     "modulus 4 must be 0 or a prime below 2^62"),
    (lambda c: c.det(np.eye(3), modulus=7), "matrix.dtype is float64; want int64 when modulus > 0"),
    (lambda c: c.multiply(np.ones((3, 4)), np.ones((5, 2))),
     "op(a) is 3x4 and op(b) is 5x2; inner dimensions must agree"),
    (lambda c: c.multiply(np.ones((2, 2)), np.ones((2, 2), dtype=np.float32)),
     "b.dtype is float32; want a.dtype float64"),
    (lambda c: c.multiply(np.ones((2, 2), dtype=np.int64), np.ones((2, 2), dtype=np.int64)),
     "a.dtype is int64; want float32, float64, complex64, complex128 or uint32"),
    (lambda c: c.permanent(np.ones((2, 3))), "matrix must be square, got 2x3"),
    (lambda c: c.cholesky(np.ones((2, 3))), "matrix must be square, got 2x3"),
    (lambda c: c.lu(np.ones((3, 3), dtype=np.int64)),
     "matrix.dtype is int64; want float32, float64, complex64 or complex128"),
    (lambda c: c.solve(np.eye(3), np.ones((4, 1))), "rhs has 4 rows; want matrix.rows = 3"),
    (lambda c: c.solve(np.eye(3), np.ones((3, 1), dtype=np.float32)),
     "rhs.dtype is float32; want matrix.dtype float64"),
    (lambda c: c.lu(np.ones((2, 3, 4))), "each matrix of the batch must be square, got 3x4"),
]


@pytest.mark.parametrize("call,message", REFUSALS)
def test_client_refuses_before_sending_with_the_server_message(client, call, message):
    with pytest.raises(matrixd.InvalidArgument) as refused:
        call(client)
    assert refused.value.message == message


@pytest.mark.parametrize("call,message", REFUSALS)
def test_server_refuses_with_invalid_argument_naming_the_field(unchecked, call, message):
    with pytest.raises(matrixd.InvalidArgument) as refused:
        call(unchecked)
    assert message in refused.value.message
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert isinstance(refused.value, ValueError)
    assert str(refused.value).startswith("INVALID_ARGUMENT: ")


def test_non_finite_entry_is_named_by_the_server(client):
    a = np.eye(3)
    a[2, 0] = np.nan
    with pytest.raises(matrixd.InvalidArgument, match=r"matrix\[2, 0\] is not finite"):
        client.det(a)


def test_unsupported_numpy_dtype_is_refused(client):
    with pytest.raises(matrixd.InvalidArgument, match="matrix.dtype float128|matrix.dtype"):
        client.det(np.eye(2, dtype=np.longdouble))
    with pytest.raises(matrixd.InvalidArgument, match="has 1 dimensions"):
        client.det(np.ones(3))


def test_cholesky_of_an_indefinite_matrix_is_failed_precondition(client):
    with pytest.raises(matrixd.FailedPrecondition, match="positive definite"):
        client.cholesky(np.diag([1.0, -1.0]))


def test_permanent_past_the_server_limit(client):
    with pytest.raises(matrixd.InvalidArgument, match="limited to n <= 30"):
        client.permanent(np.ones((31, 31)))


def test_unknown_handle_is_not_found(client):
    with pytest.raises(matrixd.NotFound) as missing:
        client.download("0" * 32)
    assert isinstance(missing.value, LookupError)


def test_unreachable_server_is_unavailable():
    with matrixd.Client("127.0.0.1:1", timeout=5) as c:
        with pytest.raises(matrixd.Unavailable):
            c.det(np.eye(2))


def test_every_status_code_has_its_class():
    for code in grpc.StatusCode:
        if code == grpc.StatusCode.OK:
            continue
        error = errors.error_for(code, "m")
        assert type(error) is not errors.MatrixdError and error.code == code
    assert isinstance(errors.error_for_value(4, "late"), matrixd.DeadlineExceeded)
    assert isinstance(errors.error_for_value(8, "full"), matrixd.ResourceExhausted)


def test_factorize_over_several_devices_is_refused_by_the_cpu_server_naming_devices(client):
    with pytest.raises(matrixd.InvalidArgument) as refused:
        client.cholesky(np.eye(3), devices=2)
    assert "devices is 2: one factorization over several GPUs" in refused.value.message
    with pytest.raises(matrixd.InvalidArgument) as refused:
        client.qr(np.eye(3), devices=2)
    assert "kind is QR with devices = 2" in refused.value.message
    assert client.lu(np.eye(3), devices=1).permutation.tolist() == [0, 1, 2]
