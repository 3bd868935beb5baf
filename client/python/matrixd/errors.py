"""The exceptions of the matrixd client: one class per gRPC status code.

Every error the server returns is raised as the subclass of MatrixdError for its status code, with
the server's message (which names the field and the value: "matrix must be square, got 3x4").
Checks the client makes before sending raise the same classes with the same messages. Classes
also derive from the nearest built-in exception (InvalidArgument is a ValueError,
DeadlineExceeded a TimeoutError, ...), so generic handlers still catch them.
"""

from typing import Optional

import grpc


class MatrixdError(Exception):
    """A failed matrixd call. `code` is the grpc.StatusCode, `message` the server's text."""

    code = grpc.StatusCode.UNKNOWN

    def __init__(self, message: str, code: Optional[grpc.StatusCode] = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self):
        return f"{self.code.name}: {self.message}"


class Cancelled(MatrixdError):
    code = grpc.StatusCode.CANCELLED


class Unknown(MatrixdError):
    code = grpc.StatusCode.UNKNOWN


class InvalidArgument(MatrixdError, ValueError):
    code = grpc.StatusCode.INVALID_ARGUMENT


class DeadlineExceeded(MatrixdError, TimeoutError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class NotFound(MatrixdError, LookupError):
    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(MatrixdError):
    code = grpc.StatusCode.ALREADY_EXISTS


class PermissionDenied(MatrixdError, PermissionError):
    code = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhausted(MatrixdError, MemoryError):
    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class FailedPrecondition(MatrixdError):
    code = grpc.StatusCode.FAILED_PRECONDITION


class Aborted(MatrixdError):
    code = grpc.StatusCode.ABORTED


class OutOfRange(MatrixdError, IndexError):
    code = grpc.StatusCode.OUT_OF_RANGE


class Unimplemented(MatrixdError, NotImplementedError):
    code = grpc.StatusCode.UNIMPLEMENTED


class Internal(MatrixdError):
    code = grpc.StatusCode.INTERNAL


class Unavailable(MatrixdError, ConnectionError):
    code = grpc.StatusCode.UNAVAILABLE


class DataLoss(MatrixdError):
    code = grpc.StatusCode.DATA_LOSS


class Unauthenticated(MatrixdError):
    code = grpc.StatusCode.UNAUTHENTICATED


_BY_CODE = {cls.code: cls for cls in MatrixdError.__subclasses__()}
_BY_VALUE = {code.value[0]: code for code in grpc.StatusCode}


def error_for(code: grpc.StatusCode, message: str) -> MatrixdError:
    """The exception for a status code and message."""
    return _BY_CODE.get(code, MatrixdError)(message, code)


def error_for_value(value: int, message: str) -> MatrixdError:
    """The exception for a numeric google.rpc.Code (as a JobError carries it)."""
    return error_for(_BY_VALUE.get(value, grpc.StatusCode.UNKNOWN), message)


def from_rpc_error(error: grpc.RpcError) -> MatrixdError:
    """The exception for a failed gRPC call (sync or asyncio)."""
    return error_for(error.code(), error.details() or "")
