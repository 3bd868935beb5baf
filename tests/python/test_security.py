"""Security through the real binaries: matrixd with mutual TLS and a token file, the Python
client's tls_ca/tls_cert/tls_key/token arguments, matrixctl's --tls_* and --token flags, and a
token revoked by SIGHUP. Certificates are made with openssl at test time (skipped without it)."""

import os
import re
import shutil
import signal
import subprocess
import time

import numpy as np
import pytest

import matrixd
from conftest import CTL, SERVER

CERT_SCRIPT = r"""
set -e
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }
ca() { key $1.key; openssl req -x509 -new -key $1.key -out $1.pem -days 2 -subj /CN=$1; }
leaf() {
  key $1.key; openssl req -new -key $1.key -out $1.csr -subj "$3"
  openssl x509 -req -in $1.csr -CA $2.pem -CAkey $2.key -CAcreateserial -out $1.pem -days ${DAYS:-2} ${4:+-extfile $4}
}
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > server.ext
ca ca; ca ca2
leaf server ca /CN=localhost server.ext
leaf server2 ca2 /CN=localhost server.ext
leaf client ca /CN=alice
DAYS=-1 leaf expired ca /CN=old
"""

A = np.array([[2.0, 1.0], [1.0, 3.0]])


def start(args):
    """(address, process) of a matrixd started with `args`."""
    process = subprocess.Popen(
        [SERVER, "--listen=127.0.0.1:0", "--metrics=", "--backend=cpu"] + args,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in process.stdout:
        found = re.search(r"listening on (\S+)", line)
        if found:
            return found.group(1), process
    raise RuntimeError(f"{SERVER} exited with {process.wait()} before listening")


@pytest.fixture(scope="module")
def secure_server(tmp_path_factory):
    """(address, directory, process) of a matrixd with mutual TLS and tokens alice and bob."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl to make test certificates")
    d = tmp_path_factory.mktemp("security")
    subprocess.run(["bash", "-c", CERT_SCRIPT], cwd=d, check=True, capture_output=True)
    (d / "tokens").write_text("alice tok-alice\nbob tok-bob max_permanent_n=4\n")
    address, process = start([f"--tls_cert={d}/server.pem", f"--tls_key={d}/server.key",
                              f"--tls_client_ca={d}/ca.pem", f"--auth_tokens={d}/tokens"])
    try:
        yield address, d, process
    finally:
        process.terminate()
        process.wait(timeout=30)


def tls_args(d, **kwargs):
    return dict(tls_ca=str(d / "ca.pem"), tls_cert=str(d / "client.pem"),
                tls_key=str(d / "client.key"), timeout=20, **kwargs)


def test_tls_client_with_token_is_served(secure_server):
    address, d, _ = secure_server
    with matrixd.Client(address, token="tok-alice", **tls_args(d)) as client:
        assert client.det(A).value == pytest.approx(5.0)


def test_token_file_and_environment(secure_server, monkeypatch):
    address, d, _ = secure_server
    (d / "alice.token").write_text("tok-alice\n")
    with matrixd.Client(address, token_file=str(d / "alice.token"), **tls_args(d)) as client:
        assert client.det(A).value == pytest.approx(5.0)
    monkeypatch.setenv("MATRIXD_TOKEN", "tok-alice")
    with matrixd.Client(address, **tls_args(d)) as client:
        assert client.det(A).value == pytest.approx(5.0)


def test_missing_or_unknown_token_is_unauthenticated(secure_server, monkeypatch):
    address, d, _ = secure_server
    monkeypatch.delenv("MATRIXD_TOKEN", raising=False)
    for token in (None, "tok-nobody"):
        with matrixd.Client(address, token=token, **tls_args(d)) as client:
            with pytest.raises(matrixd.MatrixdError) as error:
                client.det(A)
            assert error.value.code.name == "UNAUTHENTICATED"


def test_plaintext_certificateless_and_expired_clients_are_refused(secure_server):
    address, d, _ = secure_server
    with matrixd.Client(address, token="tok-alice", timeout=10) as plaintext:
        with pytest.raises(matrixd.MatrixdError) as error:
            plaintext.det(A)
        assert error.value.code.name == "UNAVAILABLE"
    with matrixd.Client(address, token="tok-alice", tls_ca=str(d / "ca.pem"),
                        timeout=10) as no_certificate:
        with pytest.raises(matrixd.MatrixdError) as error:
            no_certificate.det(A)
        assert error.value.code.name == "UNAVAILABLE"
    with matrixd.Client(address, token="tok-alice", tls_ca=str(d / "ca.pem"),
                        tls_cert=str(d / "expired.pem"), tls_key=str(d / "expired.key"),
                        timeout=10) as expired:
        with pytest.raises(matrixd.MatrixdError) as error:
            expired.det(A)
        assert error.value.code.name == "UNAVAILABLE"


def test_quota_names_itself(secure_server):
    address, d, _ = secure_server
    with matrixd.Client(address, token="tok-bob", **tls_args(d)) as client:
        with pytest.raises(matrixd.MatrixdError) as error:
            client.permanent(np.ones((5, 5)))
        assert error.value.code.name == "RESOURCE_EXHAUSTED"
        assert "max_permanent_n" in error.value.message


def test_matrixctl_tls_and_token_flags(secure_server):
    address, d, _ = secure_server
    flags = [CTL, f"--server={address}", f"--tls_ca={d}/ca.pem", f"--tls_cert={d}/client.pem",
             f"--tls_key={d}/client.key", "--tls_server_name=localhost", "--deadline=20s"]
    ok = subprocess.run(flags + ["--token=tok-alice", "det", "--hilbert", "3"],
                        capture_output=True, text=True, env={**os.environ, "MATRIXD_TOKEN": ""})
    assert ok.returncode == 0, ok.stderr
    refused = subprocess.run(flags + ["--token=tok-nobody", "det", "--hilbert", "3"],
                             capture_output=True, text=True)
    assert refused.returncode != 0
    assert "UNAUTHENTICATED" in refused.stderr + refused.stdout
    health = subprocess.run(flags + ["health"], capture_output=True, text=True,
                            env={**os.environ, "MATRIXD_TOKEN": ""})
    assert health.returncode == 0, health.stderr


def test_sighup_revokes_a_removed_token(secure_server):
    address, d, process = secure_server
    with matrixd.Client(address, token="tok-bob", **tls_args(d)) as bob:
        assert bob.det(A).value == pytest.approx(5.0)
        (d / "tokens").write_text("alice tok-alice\n")
        process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while True:
            try:
                bob.det(A)
            except matrixd.MatrixdError as error:
                assert error.code.name == "UNAUTHENTICATED"
                break
            assert time.monotonic() < deadline, "bob's token still accepted after SIGHUP"
            time.sleep(0.05)
    with matrixd.Client(address, token="tok-alice", **tls_args(d)) as alice:
        assert alice.det(A).value == pytest.approx(5.0)


def test_rotated_certificate_is_served_without_a_restart(secure_server):
    _, d, _ = secure_server
    live = d / "live"
    live.mkdir()
    shutil.copy(d / "server.pem", live / "tls.crt")
    shutil.copy(d / "server.key", live / "tls.key")
    address, process = start([f"--tls_cert={live}/tls.crt", f"--tls_key={live}/tls.key",
                              "--tls_refresh_interval=1s"])
    try:
        with matrixd.Client(address, tls_ca=str(d / "ca.pem"), timeout=10) as old:
            assert old.det(A).value == pytest.approx(5.0)
        # Replace key and certificate as a Secret volume does: new files renamed into place.
        shutil.copy(d / "server2.key", live / "tls.key.new")
        shutil.copy(d / "server2.pem", live / "tls.crt.new")
        os.replace(live / "tls.key.new", live / "tls.key")
        os.replace(live / "tls.crt.new", live / "tls.crt")
        deadline = time.monotonic() + 15
        while True:
            # A fresh client (a fresh connection) trusting only the new CA.
            with matrixd.Client(address, tls_ca=str(d / "ca2.pem"), timeout=5) as new:
                try:
                    assert new.det(A).value == pytest.approx(5.0)
                    break
                except matrixd.MatrixdError as error:
                    assert error.code.name == "UNAVAILABLE"
            assert time.monotonic() < deadline, "the rotated certificate was never served"
            time.sleep(0.2)
    finally:
        process.terminate()
        process.wait(timeout=30)
