"""Resident matrices: upload/download bit for bit, operands by handle, keep chains, release."""

import numpy as np
import pytest

import matrixd
from matrixd import _transfer
from conftest import random_matrix

DTYPES = [np.float32, np.float64, np.complex64, np.complex128, np.int64, np.uint32]


@pytest.mark.parametrize("dtype", DTYPES)
def test_upload_download_round_trip_is_bit_for_bit(client, rng, dtype):
    a = random_matrix(rng, (37, 23), dtype)
    a[0, 0] = -0.0 if a.dtype.kind == "f" else a[0, 0]
    with client.upload(a, label="round trip") as remote:
        assert remote.shape == (37, 23) and remote.dtype == np.dtype(dtype)
        assert remote.label == "round trip" and remote.nbytes == a.nbytes
        back = remote.download()
    assert back.dtype == a.dtype and back.tobytes() == a.tobytes()
    assert remote.released


def test_fortran_order_upload_is_the_same_matrix(client, rng):
    a = np.asfortranarray(rng.standard_normal((9, 5)))
    with client.upload(a) as remote:
        np.testing.assert_array_equal(remote.download(), a)
        np.testing.assert_array_equal(client.download(remote, rows=(2, 5)), a[2:5])


def test_upload_in_many_chunks(client, rng):
    a = rng.standard_normal((300, 301))  # ~700 KiB in 64 KiB chunks, the last one short
    info = client._invoke("Upload", _transfer.upload_chunks(a, chunk_bytes=64 << 10), None)
    remote = client._remote(info)
    assert client.download(remote).tobytes() == a.tobytes()
    remote.release()


def test_multi_chunk_download_of_a_large_matrix(client, rng):
    a = rng.standard_normal((1500, 1000))  # 12 MB: three 4 MiB download chunks
    with client.upload(a) as remote:
        assert remote.download().tobytes() == a.tobytes()


def test_operations_take_remote_operands(client, rng):
    a, b = rng.standard_normal((8, 8)) + 8 * np.eye(8), rng.standard_normal((8, 3))
    with client.upload(a) as ra, client.upload(b) as rb:
        assert client.det(ra).value == pytest.approx(np.linalg.det(a), rel=1e-12)
        np.testing.assert_allclose(client.multiply(ra, rb).c, a @ b, rtol=1e-12)
        np.testing.assert_allclose(client.multiply(ra, b).c, a @ b, rtol=1e-12)
        np.testing.assert_allclose(client.solve(ra, rb).x, np.linalg.solve(a, b), rtol=1e-10)


def test_keep_chain_stays_on_the_server(client, rng):
    a = rng.standard_normal((16, 16))
    with client.upload(a) as ra:
        c1 = client.multiply(ra, ra, keep=True).c
        assert isinstance(c1, matrixd.RemoteMatrix) and c1.label == "c"
        c2 = client.multiply(c1, ra, keep=True).c
        c3 = client.multiply(c2, c1, keep=True).c
        want = (a @ a) @ a @ (a @ a)
        np.testing.assert_allclose(c3.download(), want, rtol=1e-10)
        handles = {m.handle for m in client.list_matrices()}
        assert {ra.handle, c1.handle, c2.handle, c3.handle} <= handles
        for m in (c1, c2, c3):
            assert m.release() == 16 * 16 * 8
        assert not {c1.handle, c2.handle, c3.handle} & {m.handle for m in client.list_matrices()}


def test_kept_factorization_solves_many_times(client, rng):
    a = rng.standard_normal((10, 10)) + 10 * np.eye(10)
    f = client.lu(a, keep=True, keep_input=True)
    assert isinstance(f.factorization, matrixd.RemoteFactorization)
    assert f.factorization.kind == "lu" and f.kept["lu"] is f.factorization
    for transpose, op in (("N", a), ("T", a.T), ("C", a.conj().T)):
        b = rng.standard_normal((10, 2))
        s = f.factorization.solve(b, transpose=transpose, residual=True)
        np.testing.assert_allclose(s.x, np.linalg.solve(op, b), rtol=1e-10)
        assert s.residual < 1e-12
    kept_x = client.solve(f.factorization, np.ones(10), keep=True).x
    assert isinstance(kept_x, matrixd.RemoteMatrix)
    np.testing.assert_allclose(kept_x.download()[:, 0], np.linalg.solve(a, np.ones(10)))
    handle = f.factorization.handle
    f.factorization.release()
    with pytest.raises(matrixd.NotFound):
        client.download(handle)


def test_released_matrix_is_refused_and_release_is_not_found(client, rng):
    remote = client.upload(np.eye(3))
    remote.release()
    with pytest.raises(matrixd.InvalidArgument, match="was released"):
        client.det(remote)
    with pytest.raises(matrixd.NotFound):
        client.release(remote)


def test_closing_the_client_releases_what_it_uploaded(server, rng):
    with matrixd.Client(server) as other:
        kept = other.upload(np.eye(4))
        handle = kept.handle
    with matrixd.Client(server) as c:
        assert handle not in {m.handle for m in c.list_matrices()}


def test_wrong_crc_is_refused(client):
    chunks = list(_transfer.upload_chunks(np.eye(4)))
    chunks[-1].checksum.crc32c ^= 1
    with pytest.raises(matrixd.InvalidArgument, match="(?i)crc"):
        client._invoke("Upload", iter(chunks), None)


def test_generate_makes_seeded_random_identity_and_hilbert_matrices(client):
    with client.generate(6, 9, seed=3) as a, client.generate(6, 9, seed=3) as again, \
            client.generate(6, 9, seed=4) as other:
        assert a.shape == (6, 9) and a.dtype == np.float64 and a.layout == "single"
        values = a.download()
        assert values.tobytes() == again.download().tobytes()  # a pure function of the seed
        assert values.tobytes() != other.download().tobytes()
        assert np.all(values >= -1.0) and np.all(values < 1.0)
    with client.generate(5, 5, dtype=np.complex64, kind="identity") as eye:
        np.testing.assert_array_equal(eye.download(), np.eye(5, dtype=np.complex64))
    with client.generate(4, 3, kind="hilbert") as h:
        i, j = np.indices((4, 3))
        np.testing.assert_allclose(h.download(), 1.0 / (i + j + 1), rtol=1e-15)


def test_distributed_layout_needs_two_gpus_and_bad_names_are_refused(client, rng):
    # The test server runs the CPU backend: a distributed matrix is refused, naming the field,
    # and nothing is kept.
    before = {m.handle for m in client.list_matrices()}
    a = rng.standard_normal((8, 8))
    for make in (lambda: client.upload(a, layout="distributed"),
                 lambda: client.generate(8, 8, layout="distributed")):
        with pytest.raises(matrixd.errors.InvalidArgument, match="layout"):
            make()
    with pytest.raises(matrixd.errors.InvalidArgument, match="layout"):
        client.upload(a, layout="sideways")
    with pytest.raises(matrixd.errors.InvalidArgument, match="kind"):
        client.generate(8, 8, kind="lemon")
    assert {m.handle for m in client.list_matrices()} == before
