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


def _status_class(name: str, code: grpc.StatusCode, *builtins) -> type:
    return type(name, (MatrixdError,) + builtins, {"code": code, "__module__": __name__,
                                                   "__doc__": f"gRPC status {code.name}."})


Cancelled = _status_class("Cancelled", grpc.StatusCode.CANCELLED)
Unknown = _status_class("Unknown", grpc.StatusCode.UNKNOWN)
InvalidArgument = _status_class("InvalidArgument", grpc.StatusCode.INVALID_ARGUMENT, ValueError)
DeadlineExceeded = _status_class("DeadlineExceeded", grpc.StatusCode.DEADLINE_EXCEEDED,
                                 TimeoutError)
NotFound = _status_class("NotFound", grpc.StatusCode.NOT_FOUND, LookupError)
AlreadyExists = _status_class("AlreadyExists", grpc.StatusCode.ALREADY_EXISTS)
PermissionDenied = _status_class("PermissionDenied", grpc.StatusCode.PERMISSION_DENIED,
                                 PermissionError)
ResourceExhausted = _status_class("ResourceExhausted", grpc.StatusCode.RESOURCE_EXHAUSTED,
                                  MemoryError)
FailedPrecondition = _status_class("FailedPrecondition", grpc.StatusCode.FAILED_PRECONDITION)
Aborted = _status_class("Aborted", grpc.StatusCode.ABORTED)
OutOfRange = _status_class("OutOfRange", grpc.StatusCode.OUT_OF_RANGE, IndexError)
Unimplemented = _status_class("Unimplemented", grpc.StatusCode.UNIMPLEMENTED,
                              NotImplementedError)
Internal = _status_class("Internal", grpc.StatusCode.INTERNAL)
Unavailable = _status_class("Unavailable", grpc.StatusCode.UNAVAILABLE, ConnectionError)
DataLoss = _status_class("DataLoss", grpc.StatusCode.DATA_LOSS)
Unauthenticated = _status_class("Unauthenticated", grpc.StatusCode.UNAUTHENTICATED)

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
