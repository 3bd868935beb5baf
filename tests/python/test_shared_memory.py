"""matrixd.SharedMemoryRegion against a real server: operands placed in shared memory and results
written into it equal the inline answers bit for bit; a region is registered while open and gone
(from the server's list and from /dev/shm) once closed."""

import os

import numpy as np
import pytest

import matrixd
from conftest import random_matrix


def names(client):
    return [info.name for info in client.list_shared_memory()]


def test_region_is_registered_while_open_and_removed_when_closed(client):
    with client.shared_memory(1 << 16, name="py-lifetime") as region:
        path = "/dev/shm" + region.key
        assert os.path.exists(path)
        [info] = [i for i in client.list_shared_memory() if i.name == "py-lifetime"]
        assert info.key == region.key and info.byte_size == 1 << 16
    assert "py-lifetime" not in names(client)
    assert not os.path.exists(path)


def test_explicit_registration_and_name_in_use(client):
    region = matrixd.SharedMemoryRegion(client, 4096, name="py-later", register=False)
    try:
        assert "py-later" not in names(client)
        region.register()
        assert "py-later" in names(client)
        with pytest.raises(matrixd.AlreadyExists):
            matrixd.SharedMemoryRegion(client, 4096, name="py-later", key="/matrixd_py_later_2")
        assert not os.path.exists("/dev/shm/matrixd_py_later_2")
        region.unregister()
        assert "py-later" not in names(client)
    finally:
        region.close()
    assert not os.path.exists("/dev/shm" + region.key)


def test_views_are_checked(client):
    with client.shared_memory(1024) as region:
        with pytest.raises(matrixd.InvalidArgument, match="leaves shared-memory region"):
            region.view(1000, (3, 3))
        with pytest.raises(matrixd.InvalidArgument, match="multiple of the element size"):
            region.view(4, (1, 1))
        a = region.empty((3, 3))
        b = region.empty((2, 2), np.float32)
        assert (a.offset, b.offset) == (0, 256)
        with pytest.raises(matrixd.ResourceExhausted):
            region.empty((100, 100))


def test_det_and_permanent_from_shared_memory_equal_inline(client, rng):
    a = random_matrix(rng, (64, 64), np.float64)
    small = random_matrix(rng, (8, 8), np.complex128)
    with client.shared_memory(1 << 16) as region:
        shm_det = client.det(region.put(a))
        shm_per = client.permanent(region.put(small))
    inline_det = client.det(a)
    assert (shm_det.value, shm_det.log_abs, shm_det.mantissa, shm_det.exponent10) == \
        (inline_det.value, inline_det.log_abs, inline_det.mantissa, inline_det.exponent10)
    assert shm_per.value == client.permanent(small).value


def test_product_written_into_shared_memory_equals_inline(client, rng):
    a = random_matrix(rng, (20, 30), np.float64)
    b = random_matrix(rng, (30, 10), np.float64)
    inline = client.multiply(a, b).c
    with client.shared_memory(1 << 16) as region:
        c = region.empty((20, 10))
        product = client.multiply(region.put(a), region.put(b), outputs={"c": c})
        assert product.c is c.array
        assert product.c.tobytes() == inline.tobytes()
        # One operand inline, the other in shared memory.
        assert client.multiply(a, region.put(b)).c.tobytes() == inline.tobytes()


def test_factorizations_and_solves_through_shared_memory_equal_inline(client, rng):
    n = 40
    a = random_matrix(rng, (n, n), np.float64)
    b = random_matrix(rng, (n, 3), np.float64)
    inline = client.lu(a, rhs=b)
    with client.shared_memory(1 << 18) as region:
        lu, x = region.empty((n, n)), region.empty((n, 3))
        f = client.lu(region.put(a), rhs=region.put(b), outputs={"lu": lu, "solution": x})
        assert lu.array.tobytes() == inline.lu.tobytes()
        assert x.array.tobytes() == inline.solution.tobytes()
        assert np.array_equal(f.permutation, inline.permutation)

        # A kept factorization solved for B in shared memory, X written there.
        kept = client.lu(region.put(a), keep=True).factorization
        x2 = region.empty((n, 3))
        solved = client.solve(kept, region.put(b), outputs={"solution": x2})
        assert solved.x is x2.array
        assert x2.array.tobytes() == client.solve(kept, b).x.tobytes()

        # A batch of small LUs, shared memory in and out.
        batch = random_matrix(rng, (50, 8, 8), np.float64)
        lus = region.empty((50, 8, 8))
        client.lu(region.put(batch), outputs={"lu": lus})
        assert lus.array.tobytes() == client.lu(batch).lu.tobytes()

        # Its pivots too (an INT64 target of batch * n entries): out of the response.
        pivots = region.empty((50, 8), dtype=np.int64)
        placed = client.lu(region.put(batch), outputs={"lu": lus, "permutation": pivots})
        assert np.array_equal(placed.permutation, client.lu(batch).permutation)
        assert np.shares_memory(placed.permutation, pivots.array)


def test_outputs_with_keep_and_closed_regions_are_refused(client, rng):
    a = random_matrix(rng, (4, 4), np.float64)
    region = client.shared_memory(4096)
    view = region.put(a)
    with pytest.raises(matrixd.InvalidArgument, match="outputs and keep"):
        client.multiply(a, a, keep=True, outputs={"c": region.empty((4, 4))})
    region.close()
    with pytest.raises(matrixd.InvalidArgument, match="was closed"):
        client.det(view)


def test_aio_client_takes_shared_matrices(client, server, rng):
    import asyncio
    import matrixd.aio

    a = random_matrix(rng, (16, 16), np.float64)
    with client.shared_memory(1 << 14) as region:
        view, c = region.put(a), region.empty((16, 16))

        async def run():
            async with matrixd.aio.Client(server, timeout=60) as aio:
                with pytest.raises(matrixd.InvalidArgument, match="blocking matrixd.Client"):
                    matrixd.SharedMemoryRegion(aio, 4096)
                listed = [i.name for i in await aio.list_shared_memory()]
                await aio.multiply(view, view, outputs={"c": c})
                return listed

        assert region.name in asyncio.run(run())
        assert c.array.tobytes() == client.multiply(a, a).c.tobytes()
