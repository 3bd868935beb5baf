"""What matrixd.Client and matrixd.aio.Client share: channel settings, credentials, deadlines and
the bookkeeping of the resident matrices a client made (released when it closes)."""

from typing import Optional, Union

import grpc

from matrixd import remote
from matrixd.v1 import matrixd_pb2, matrixd_pb2_grpc

# Matches the server's --max_message_bytes default (2^30): inline matrices up to 1 GiB.
MAX_MESSAGE_BYTES = 1 << 30


def channel_options(max_message_bytes: int) -> list:
    return [("grpc.max_send_message_length", max_message_bytes),
            ("grpc.max_receive_message_length", max_message_bytes)]


def credentials(tls: Union[bool, grpc.ChannelCredentials, None]):
    """None for plaintext; the default roots for tls=True; or the credentials given."""
    if tls is True:
        return grpc.ssl_channel_credentials()
    return tls or None


class ClientBase:
    """The channel, settings and resident-matrix bookkeeping; subclasses send the calls.
    _channels is the module whose secure_channel/insecure_channel make the channel (grpc or
    grpc.aio)."""

    _channels = grpc

    def __init__(self, target: str, tls: Union[bool, grpc.ChannelCredentials] = False,
                 token: Optional[str] = None, timeout: Optional[float] = None, check: bool = True,
                 max_message_bytes: int = MAX_MESSAGE_BYTES):
        self.target = target
        self.timeout = timeout
        self.check = check
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        self._resident = {}  # handle -> RemoteMatrix this client made and has not released
        options = channel_options(max_message_bytes)
        creds = credentials(tls)
        self._channel = (self._channels.secure_channel(target, creds, options) if creds else
                         self._channels.insecure_channel(target, options))
        self._stub = matrixd_pb2_grpc.MatrixServiceStub(self._channel)

    def _deadline(self, timeout: Optional[float]) -> Optional[float]:
        return self.timeout if timeout is None else timeout

    def _remote(self, info: matrixd_pb2.ResidentMatrix, track: bool = True) -> remote.RemoteMatrix:
        """The one RemoteMatrix object of a handle, made on first sight and then refreshed.
        Tracked ones (made by this client) are released when it closes."""
        known = self._resident.get(info.handle)
        if known is None:
            known = remote.remote_for(self, info)
            if track:
                self._resident[info.handle] = known
        else:
            known.refresh(info)
        return known

    def _forget(self, matrix: remote.RemoteMatrix) -> None:
        matrix.released = True
        self._resident.pop(matrix.handle, None)
