"""matrixd.aio.Client: the same operations on asyncio."""

import asyncio

import numpy as np
import pytest

import matrixd
import matrixd.aio


def run(coroutine):
    return asyncio.run(coroutine)


def test_operations_and_concurrent_calls(server, rng):
    a = rng.standard_normal((12, 12))

    async def main():
        async with matrixd.aio.Client(server, timeout=60) as c:
            dets = await asyncio.gather(*(c.det(a * k) for k in (1, 2, 3)))
            product = await c.multiply(a, a)
            f = await c.lu(a, rhs=np.ones(12))
            per = await c.permanent(np.ones((5, 5), dtype=np.int64))
            return dets, product, f, per

    dets, product, f, per = run(main())
    for k, d in zip((1, 2, 3), dets):
        assert d.value == pytest.approx(np.linalg.det(a * k), rel=1e-10)
    np.testing.assert_allclose(product.c, a @ a, rtol=1e-12)
    np.testing.assert_allclose(f.solution, np.linalg.solve(a, np.ones(12)), rtol=1e-10)
    assert per.exact == 120


def test_resident_round_trip_and_keep(server, rng):
    a = rng.standard_normal((40, 30)).astype(np.float32)

    async def main():
        async with matrixd.aio.Client(server) as c:
            async with await c.upload(a) as remote:
                back = await remote.download()
                kept = (await c.multiply(remote, remote, transpose_b=True, keep=True)).c
                product = await kept.download()
                listed = {m.handle for m in await c.list_matrices()}
                assert {remote.handle, kept.handle} <= listed
            return back, product, remote, kept

    back, product, remote, kept = run(main())
    assert back.tobytes() == a.tobytes() and remote.released and kept.released
    np.testing.assert_allclose(product, a @ a.T, rtol=1e-4, atol=1e-4)


def test_jobs_and_errors(server, rng):
    async def main():
        async with matrixd.aio.Client(server) as c:
            job = await c.submit("permanent", rng.uniform(0.5, 1, (24, 24)))
            updates = [u async for u in job.watch()]
            result = await job.wait()
            slow = await c.submit("permanent", rng.uniform(0.5, 1, (30, 30)))
            await slow.cancel()
            with pytest.raises(matrixd.Cancelled):
                await slow.wait(timeout=30)
            with pytest.raises(matrixd.InvalidArgument, match="must be square, got 2x3"):
                await c.det(np.ones((2, 3)))
            with pytest.raises(matrixd.DeadlineExceeded):
                await c.permanent(rng.uniform(0.5, 1, (30, 30)), timeout=0.3)
            return updates, result

    updates, result = run(main())
    assert updates[-1].state == "succeeded" and result.value > 0


def test_generate(server):
    async def main():
        async with matrixd.aio.Client(server) as client:
            async with await client.generate(3, 4, seed=9) as a:
                values = await a.download()
                assert values.shape == (3, 4) and a.layout == "single"
                assert np.all(np.abs(values) <= 1.0)
            with pytest.raises(matrixd.errors.InvalidArgument, match="layout"):
                await client.generate(3, 4, layout="distributed")

    run(main())
