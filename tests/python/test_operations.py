"""Every operation against numpy references, for every dtype it takes."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import matrixd

from conftest import random_matrix

FLOATING = [np.float32, np.float64, np.complex64, np.complex128]
# Relative tolerances of single and double precision results.
RTOL = {np.float32: 2e-4, np.complex64: 2e-4, np.float64: 1e-10, np.complex128: 1e-10}


def brute_permanent(a):
    n = a.shape[0]
    return sum(np.prod([a[i, p[i]] for i in range(n)]) for p in itertools.permutations(range(n)))


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("method", ["lu", "condensation"])
def test_det_matches_numpy(client, rng, dtype, method):
    a = random_matrix(rng, (12, 12), dtype)
    d = client.det(a, method=method)
    want = np.linalg.det(a.astype(np.complex128 if np.iscomplexobj(a) else np.float64))
    sign, logabs = np.linalg.slogdet(a.astype(np.complex128))
    assert d.method == method
    assert d.value == pytest.approx(want, rel=RTOL[dtype])
    assert d.log_abs == pytest.approx(logabs, rel=RTOL[dtype], abs=RTOL[dtype])
    assert d.mantissa * 10.0**d.exponent10 == pytest.approx(want, rel=RTOL[dtype])
    assert 1 <= abs(d.mantissa) < 10
    if np.iscomplexobj(a):
        assert isinstance(d.value, complex) and d.sign == pytest.approx(sign, rel=1e-3)
    else:
        assert d.sign == np.sign(want)
    assert d.stats.backend == "cpu"


def test_det_past_double_range_keeps_mantissa_and_exponent(client):
    a = np.diag(np.full(200, 1e5))  # det = 1e1000
    d = client.det(a)
    assert d.exponent10 == 1000 and d.mantissa == pytest.approx(1.0)
    assert d.value == math.inf and d.log_abs == pytest.approx(1000 * math.log(10))


def test_det_int64_exact_is_a_python_int(client, rng):
    a = random_matrix(rng, (9, 9), np.int64)
    d = client.det(a)
    want = round(np.linalg.det(a.astype(np.float64)))
    assert isinstance(d.exact, int) and d.exact == want


def test_det_of_hilbert_int64_scaled_exactly(client):
    # H_n scaled by lcm(1..2n-1) is an integer matrix; its det is exact with Fractions.
    n, scale = 6, math.lcm(*range(1, 12))
    a = np.array([[scale // (i + j + 1) for j in range(n)] for i in range(n)], dtype=np.int64)
    rows = [[Fraction(int(x)) for x in row] for row in a]
    det = Fraction(1)
    for k in range(n):  # Gaussian elimination over the rationals
        det *= rows[k][k]
        for i in range(k + 1, n):
            f = rows[i][k] / rows[k][k]
            rows[i] = [x - f * y for x, y in zip(rows[i], rows[k])]
    assert client.det(a).exact == det


def test_det_mod_p(client, rng):
    p = 1_000_000_007
    a = random_matrix(rng, (8, 8), np.int64)
    d = client.det(a, modulus=p)
    exact = client.det(a).exact
    assert d.residue == exact % p and d.exact is None


def test_fortran_order_and_big_endian_inputs_mean_the_same_matrix(client, rng):
    a = random_matrix(rng, (7, 7), np.float64)
    want = client.det(a).value
    assert client.det(np.asfortranarray(a)).value == want
    assert client.det(a.astype(">f8")).value == want
    assert client.det(a.T.copy().T).value == want
    # Reversing 7 columns is 3 swaps: the sign flips.
    assert client.det(a[:, ::-1]).value == pytest.approx(-want, rel=1e-12)


def test_lists_and_narrow_integers_convert(client):
    assert client.det([[1, 2], [3, 4]]).exact == -2
    assert client.det(np.array([[1, 2], [3, 4]], dtype=np.int8)).exact == -2
    assert client.det([[1.5, 0], [0, 2]]).value == 3.0


@pytest.mark.parametrize("dtype", FLOATING + [np.uint32])
def test_multiply_matches_numpy(client, rng, dtype):
    a, b = random_matrix(rng, (13, 7), dtype), random_matrix(rng, (7, 5), dtype)
    c = client.multiply(a, b).c
    assert c.dtype == np.dtype(dtype) and c.shape == (13, 5)
    if dtype == np.uint32:
        np.testing.assert_array_equal(c, (a.astype(np.uint64) @ b.astype(np.uint64)) % 2**32)
    else:
        np.testing.assert_allclose(c, a @ b, rtol=RTOL[dtype], atol=RTOL[dtype])


def test_multiply_transposes_and_fortran_operands(client, rng):
    a, b = rng.standard_normal((6, 9)), rng.standard_normal((4, 6))
    c = client.multiply(np.asfortranarray(a), b, transpose_a=True, transpose_b=True).c
    np.testing.assert_allclose(c, a.T @ b.T, rtol=1e-12)


@pytest.mark.parametrize("dtype", FLOATING)
def test_verified_multiply_reports_a_passed_check(client, rng, dtype):
    a, b = random_matrix(rng, (13, 7), dtype), random_matrix(rng, (7, 5), dtype)
    p = client.multiply(a, b, verify=True)
    assert p.check is not None and p.check.passed
    assert 0 <= p.check.discrepancy <= p.check.tolerance
    assert p.check.vectors == 8
    assert client.multiply(a, b).check is None


def test_stats_carry_provenance_and_a_checkable_result_crc32c(client, rng):
    from matrixd import _crc32c, _ops
    a, b = rng.standard_normal((9, 6)), rng.standard_normal((6, 4))
    call = _ops.multiply(a, b, verify=True)
    response = client._invoke(call.rpc, call.request, None)
    s = response.stats
    assert s.algorithm.startswith("gemm") or s.algorithm.startswith("cublas_gemm")
    assert "freivalds" in s.algorithm
    assert s.precision == "float64"
    assert "openblas" in s.versions
    # The caller's own check: the response without stats (and kept), serialized deterministically.
    bare = type(response)()
    bare.CopyFrom(response)
    bare.ClearField("stats")
    assert s.result_crc32c == "%08x" % _crc32c.crc32c(bare.SerializeToString(deterministic=True))


@pytest.mark.parametrize("precision", ["input", "float32"])
def test_refined_solve_reports_its_refinement(client, rng, precision):
    a, x = rng.standard_normal((40, 40)), rng.standard_normal(40)
    f = client.factorize(a, rhs=a @ x, refine=True, refine_precision=precision)
    r = f.refinement
    assert r is not None and r.converged and not r.fell_back
    assert r.backward_error <= r.threshold
    assert r.factor_precision == ("float64" if precision == "input" else "float32")
    np.testing.assert_allclose(f.solution, x, rtol=1e-10)
    assert (f.lu is None) == (precision == "float32")
    assert client.factorize(a, rhs=a @ x).refinement is None
    with pytest.raises(matrixd.InvalidArgument, match="refine"):
        client.factorize(a, refine=True)


def test_deterministic_repeats_are_identical_and_refuse_tf32(client, rng):
    a, b = rng.standard_normal((30, 30)), rng.standard_normal((30, 30))
    first = client.multiply(a, b, verify=True, deterministic=True)
    second = client.multiply(a, b, verify=True, deterministic=True)
    assert first.check.seed == second.check.seed == 0x243F6A8885A308D3
    assert first.check.discrepancy == second.check.discrepancy
    assert first.stats.result_crc32c == second.stats.result_crc32c
    assert np.array_equal(first.c, second.c)
    with pytest.raises(matrixd.InvalidArgument, match="allow_tf32"):
        client.multiply(a.astype(np.float32), b.astype(np.float32), allow_tf32=True,
                        deterministic=True)
    # The same request with the client's own checks off: the server refuses it too.
    from matrixd import _ops
    call = _ops.multiply(a.astype(np.float32), b.astype(np.float32), allow_tf32=True,
                         check=False, deterministic=True)
    with pytest.raises(matrixd.InvalidArgument, match="allow_tf32"):
        client._send(call, None)


def test_exact_answers_carry_certificates(client):
    a = np.array([[10**18, 1], [1, 10**18]], dtype=np.int64)
    d = client.det(a)
    assert d.exact == 10**36 - 1
    assert d.certificate.residues is None and len(d.certificate.primes) == 2
    assert d.certificate.covered_bits > d.certificate.bound_bits
    full = client.det(a, return_residues=True).certificate
    assert [(10**36 - 1) % p for p in full.primes] == full.residues
    per = client.permanent(np.array([[1, 2], [3, 4]], dtype=np.int64), return_residues=True)
    assert per.exact == 10 and per.certificate.residues == [10 % p for p in per.certificate.primes]
    m = client.det(np.array([[2, 1], [1, 3]], dtype=np.int64), modulus=7, return_residues=True)
    assert m.certificate.primes == [7] and m.certificate.residues == [5]


def test_verify_of_uint32_is_rejected(client):
    a = np.ones((2, 2), dtype=np.uint32)
    with pytest.raises(matrixd.InvalidArgument, match="verify"):
        client.multiply(a, a, verify=True)


def test_block_sparse_product(client, rng):
    a = rng.standard_normal((64, 64))
    a[:32, 32:] = 0
    p = client.multiply(a, a, block_size=32)
    np.testing.assert_allclose(p.c, a @ a, rtol=1e-12, atol=1e-12)
    assert p.block_products < p.block_products_total


@pytest.mark.parametrize("dtype", FLOATING + [np.int64])
def test_permanent_matches_brute_force(client, rng, dtype):
    a = random_matrix(rng, (6, 6), dtype)
    for method in ("ryser", "glynn"):
        per = client.permanent(a, method=method)
        want = brute_permanent(a.astype(np.complex128 if np.iscomplexobj(a) else np.float64))
        assert per.method == method
        assert per.value == pytest.approx(want, rel=RTOL.get(dtype, 1e-12), abs=1e-5)
    if dtype == np.int64:
        assert per.exact == int(brute_permanent(a.astype(object)))


def test_permanent_precision_and_walk_are_sent_and_reported(client, rng):
    k = rng.integers(0, 10, size=(8, 8)) * (rng.random((8, 8)) < 0.3) + 5 * np.eye(8, dtype=np.int64)
    exact = client.permanent(k.astype(np.int64))
    assert exact.precision == "exact"
    for precision in ("extended", "fast"):
        for walk in ("dense", "sparse"):
            per = client.permanent(k.astype(np.float64), precision=precision, walk=walk)
            assert per.precision == precision
            assert per.walk == walk
            assert per.value == pytest.approx(exact.exact, rel=1e-13)
    with pytest.raises(matrixd.InvalidArgument):
        client.permanent(k.astype(np.float64), precision="quad")


@pytest.mark.parametrize("dtype", FLOATING)
def test_lu_reconstructs_the_matrix(client, rng, dtype):
    a = random_matrix(rng, (10, 10), dtype)
    f = client.lu(a)
    lower = np.tril(f.lu, -1) + np.eye(10)
    upper = np.triu(f.lu)
    np.testing.assert_allclose(a[f.permutation], lower @ upper, rtol=RTOL[dtype] * 10,
                               atol=RTOL[dtype] * 10)
    assert not f.singular


def test_cholesky_and_qr(client, rng):
    m = rng.standard_normal((8, 8))
    spd = m @ m.T + 8 * np.eye(8)
    np.testing.assert_allclose(client.cholesky(spd).l, np.linalg.cholesky(spd), rtol=1e-10)
    tall = rng.standard_normal((9, 4))
    f = client.qr(tall)
    np.testing.assert_allclose(f.q @ f.r, tall, atol=1e-12)
    np.testing.assert_allclose(f.q.T @ f.q, np.eye(4), atol=1e-12)


@pytest.mark.parametrize("dtype", FLOATING)
def test_solve_matches_numpy(client, rng, dtype):
    a = random_matrix(rng, (11, 11), dtype) + 4 * np.eye(11, dtype=dtype)
    b = random_matrix(rng, (11, 3), dtype)
    np.testing.assert_allclose(client.solve(a, b).x, np.linalg.solve(a, b),
                               rtol=RTOL[dtype] * 10, atol=RTOL[dtype] * 10)


def test_solve_with_a_vector_gives_a_vector(client, rng):
    a, b = rng.standard_normal((5, 5)) + 5 * np.eye(5), rng.standard_normal(5)
    x = client.solve(a, b).x
    assert x.shape == (5,)
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-12)


def test_least_squares_by_qr(client, rng):
    a, b = rng.standard_normal((20, 4)), rng.standard_normal((20, 2))
    x = client.solve(a, b, kind="qr").x
    np.testing.assert_allclose(x, np.linalg.lstsq(a, b, rcond=None)[0], rtol=1e-10)


def test_batch_of_lu_with_rhs(client, rng):
    a = rng.standard_normal((5, 6, 6)) + 6 * np.eye(6)
    b = rng.standard_normal((5, 6))
    f = client.lu(a, rhs=b)
    assert f.lu.shape == (5, 6, 6) and f.permutation.shape == (5, 6)
    assert f.solution.shape == (5, 6)
    np.testing.assert_allclose(f.solution, np.linalg.solve(a, b[..., None])[..., 0], rtol=1e-10)
    for k in range(5):
        lower, upper = np.tril(f.lu[k], -1) + np.eye(6), np.triu(f.lu[k])
        np.testing.assert_allclose(a[k][f.permutation[k]], lower @ upper, atol=1e-12)
    np.testing.assert_array_equal(f.singular_columns, -np.ones(5))


def test_results_are_read_only_views_without_a_copy(client, rng):
    c = client.multiply(rng.standard_normal((4, 4)), np.eye(4)).c
    assert not c.flags.writeable and not c.flags.owndata and c.flags.c_contiguous


def test_python_and_matrixctl_products_agree_bit_for_bit(client, server, rng, tmp_path):
    import subprocess

    from conftest import CTL
    a, b = rng.standard_normal((33, 17)), rng.standard_normal((17, 21))
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    subprocess.run([CTL, f"--server={server}", "multiply", str(tmp_path / "a.npy"),
                    str(tmp_path / "b.npy"), f"--output={tmp_path / 'c.npy'}"],
                   check=True, capture_output=True)
    assert client.multiply(a, b).c.tobytes() == np.load(tmp_path / "c.npy").tobytes()


def test_det_accuracy_flags_an_ill_conditioned_matrix(client):
    good = client.det(np.eye(5) + 0.1)
    assert good.accuracy is not None and not good.accuracy.ill_conditioned
    assert good.accuracy.meaningful_digits > 12
    n = 11  # the Hilbert matrix of order 11 has condition ~5e14
    hilbert = np.array([[1.0 / (i + j + 1) for j in range(n)] for i in range(n)])
    bad = client.det(hilbert)
    assert bad.accuracy.ill_conditioned and bad.accuracy.rcond < 1e-10
    assert bad.accuracy.meaningful_digits < 8
    assert client.det(hilbert, method="condensation").accuracy is None


def test_factorize_estimate_condition_reports_accuracy(client):
    a = np.array([[4.0, 2.0], [2.0, 3.0]])  # rcond = 1 / (||A||_1 ||A^-1||_1) = 2 / 9
    for kind in ("lu", "cholesky", "qr"):
        result = client.factorize(a, kind, estimate_condition=True)
        assert result.accuracy is not None, kind
        assert not result.accuracy.ill_conditioned
        if kind != "qr":  # QR reports R's condition, not A's
            assert 2 / 9 * (1 - 1e-12) <= result.accuracy.rcond <= 1.0
    assert client.factorize(a, "lu").accuracy is None
    n = 10  # kappa_1(H_10) ~ 3.5e13, still safely positive definite in double
    hilbert = np.array([[1.0 / (i + j + 1) for j in range(n)] for i in range(n)])
    bad = client.factorize(hilbert, "cholesky", estimate_condition=True).accuracy
    assert bad.ill_conditioned and bad.rcond < 1e-10 and bad.meaningful_digits < 8
    with pytest.raises(matrixd.InvalidArgument, match="estimate_condition"):
        client.factorize(np.stack([a, a]), "lu", estimate_condition=True)
