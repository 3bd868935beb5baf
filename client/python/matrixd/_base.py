"""What matrixd.Client and matrixd.aio.Client share: channel settings, credentials, deadlines and
the bookkeeping of the resident matrices a client made (released when it closes)."""

import os
from typing import Optional, Union

import grpc

from matrixd import remote
from matrixd.v1 import matrixd_pb2, matrixd_pb2_grpc

# Matches the server's --max_message_bytes default (2^30): inline matrices up to 1 GiB.
MAX_MESSAGE_BYTES = 1 << 30


def channel_options(max_message_bytes: int) -> list:
    return [("grpc.max_send_message_length", max_message_bytes),
            ("grpc.max_receive_message_length", max_message_bytes)]


def _read(path: Optional[str]) -> Optional[bytes]:
    if not path:
        return None
    with open(path, "rb") as f:
        return f.read()


def credentials(tls: Union[bool, grpc.ChannelCredentials, None], tls_ca: Optional[str] = None,
                tls_cert: Optional[str] = None, tls_key: Optional[str] = None):
    """None for plaintext; the default roots for tls=True; the credentials given; or, when any of
    tls_ca (the CA that signed the server's certificate), tls_cert and tls_key (a client
    certificate for mutual TLS) is given, TLS from those PEM files."""
    if tls_ca or tls_cert or tls_key:
        if bool(tls_cert) != bool(tls_key):
            raise ValueError("tls_cert and tls_key go together")
        return grpc.ssl_channel_credentials(root_certificates=_read(tls_ca),
                                            private_key=_read(tls_key),
                                            certificate_chain=_read(tls_cert))
    if tls is True:
        return grpc.ssl_channel_credentials()
    return tls or None


def resolve_token(token: Optional[str], token_file: Optional[str]) -> Optional[str]:
    """token, else the first line of token_file, else $MATRIXD_TOKEN, else None."""
    if token and token_file:
        raise ValueError("give token or token_file, not both")
    if token:
        return token
    if token_file:
        with open(token_file) as f:
            first = f.readline().strip()
        if not first:
            raise ValueError(f"token_file {token_file!r} is empty")
        return first
    return os.environ.get("MATRIXD_TOKEN", "").strip() or None


class ClientBase:
    """The channel, settings and resident-matrix bookkeeping; subclasses send the calls.
    _channels is the module whose secure_channel/insecure_channel make the channel (grpc or
    grpc.aio)."""

    _channels = grpc

    def __init__(self, target: str, tls: Union[bool, grpc.ChannelCredentials] = False,
                 token: Optional[str] = None, timeout: Optional[float] = None, check: bool = True,
                 max_message_bytes: int = MAX_MESSAGE_BYTES, *, tls_ca: Optional[str] = None,
                 tls_cert: Optional[str] = None, tls_key: Optional[str] = None,
                 tls_server_name: Optional[str] = None, token_file: Optional[str] = None):
        self.target = target
        self.timeout = timeout
        self.check = check
        token = resolve_token(token, token_file)
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        self._resident = {}  # handle -> RemoteMatrix this client made and has not released
        options = channel_options(max_message_bytes)
        if tls_server_name:
            options.append(("grpc.ssl_target_name_override", tls_server_name))
        creds = credentials(tls, tls_ca, tls_cert, tls_key)
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
