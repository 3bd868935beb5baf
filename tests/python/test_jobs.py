"""Jobs (submit, progress, watch, wait, cancel) and deadlines."""

import time

import numpy as np
import pytest

import matrixd


def long_permanent(rng, n=29):
    return rng.uniform(0.5, 1.0, (n, n))


def test_submitted_det_returns_the_synchronous_result(client, rng):
    a = rng.standard_normal((20, 20))
    job = client.submit("det", a)
    assert isinstance(job, matrixd.Job)
    assert job.wait(timeout=60).value == client.det(a).value
    assert job.progress().state == "succeeded"


def test_submitted_factorization_and_product(client, rng):
    a = rng.standard_normal((6, 6)) + 6 * np.eye(6)
    f = client.submit("lu", a, rhs=np.ones(6)).wait(timeout=60)
    np.testing.assert_allclose(f.solution, np.linalg.solve(a, np.ones(6)), rtol=1e-12)
    c = client.submit("multiply", a, a).wait(timeout=60).c
    np.testing.assert_allclose(c, a @ a, rtol=1e-12)


def test_watch_reports_progress_then_the_finished_job(client, rng):
    job = client.submit("permanent", long_permanent(rng, 25), method="glynn")
    updates = list(job.watch(timeout=120))
    assert updates[-1].done and updates[-1].state == "succeeded"
    assert all(0.0 <= u.progress <= 1.0 for u in updates)
    assert job.wait(timeout=60).value > 0


def test_wait_with_a_progress_bar(client, rng, capsys):
    job = client.submit("permanent", long_permanent(rng, 24))
    assert job.wait(timeout=120, progress=True).value > 0
    assert "100.0%" in capsys.readouterr().err


def test_cancel_stops_a_running_job(client, rng):
    job = client.submit("permanent", long_permanent(rng, 30))
    deadline = time.monotonic() + 30
    while job.progress().state == "queued" and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.monotonic()
    job.cancel()
    with pytest.raises(matrixd.Cancelled):
        job.wait(timeout=30)
    assert time.monotonic() - started < 5
    assert job.progress().state == "cancelled"


def test_job_timeout_fails_the_job_with_deadline_exceeded(client, rng):
    job = client.submit("permanent", long_permanent(rng, 30), job_timeout=0.3)
    with pytest.raises(matrixd.DeadlineExceeded):
        job.wait(timeout=30)


def test_call_deadline_raises_deadline_exceeded(client, rng):
    started = time.monotonic()
    with pytest.raises(matrixd.DeadlineExceeded) as late:
        client.permanent(long_permanent(rng, 30), timeout=0.3)
    assert isinstance(late.value, TimeoutError)
    assert time.monotonic() - started < 5
    assert client.det(np.eye(2)).value == 1.0  # the server still answers


def test_client_default_timeout_applies(server, rng):
    with matrixd.Client(server, timeout=0.3) as c:
        with pytest.raises(matrixd.DeadlineExceeded):
            c.permanent(long_permanent(rng, 30))


def test_unknown_job_is_not_found(client):
    with pytest.raises(matrixd.NotFound):
        matrixd.Job(client, "no-such-job", None).progress()


def test_unknown_operation_is_refused(client):
    with pytest.raises(matrixd.InvalidArgument, match="operation is 'inverse'"):
        client.submit("inverse", np.eye(2))


def test_submitted_solve_with_a_kept_factorization(client, rng):
    a = rng.standard_normal((8, 8)) + 8 * np.eye(8)
    f = client.lu(a, keep=True, keep_input=True)
    b = rng.standard_normal((8, 3))
    s = client.submit("solve", f.factorization, b, residual=True).wait(timeout=60)
    np.testing.assert_allclose(s.x, np.linalg.solve(a, b), rtol=1e-10)
    assert s.kind == "lu" and s.residual < 1e-12
    f.factorization.release()
