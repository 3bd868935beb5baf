"""Client.register_cuda_shared_memory (and matrixd.aio.Client's) against a CPU server: the checks
every backend shares (handle size, one namespace with system regions) and UNIMPLEMENTED after
them; the region and matrix objects check their own bounds. The GPU path is
tests/gpu/ipc-run.sh."""

import asyncio

import pytest

import matrixd
import matrixd.aio

HANDLE = b"\x5a" * 64  # the right size; no driver takes it


def test_cpu_server_answers_unimplemented(client):
    with pytest.raises(matrixd.Unimplemented, match="--backend=cuda"):
        client.register_cuda_shared_memory("py-gpu", HANDLE, 0, 1024)
    assert all(info.name != "py-gpu" for info in client.list_shared_memory())


def test_handle_size_and_names_are_checked(client):
    with pytest.raises(matrixd.InvalidArgument, match="raw_handle has 10 bytes"):
        client.register_cuda_shared_memory("py-gpu", b"x" * 10, 0, 1024)
    with client.shared_memory(4096, name="py-taken"):
        with pytest.raises(matrixd.AlreadyExists, match="a system region"):
            client.register_cuda_shared_memory("py-taken", HANDLE, 0, 1024)
        [info] = [i for i in client.list_shared_memory() if i.name == "py-taken"]
        assert info.kind == "system" and info.device_id is None
        with pytest.raises(matrixd.NotFound, match="it is a system region"):
            client.unregister_cuda_shared_memory("py-taken")
    with pytest.raises(matrixd.NotFound):
        client.unregister_cuda_shared_memory("py-never")


def test_region_matrices_stay_inside_the_region():
    region = matrixd.CudaSharedRegion(None, "r", 0, 8 * 16)
    matrix = region.matrix(0, (4, 4))
    assert matrix.shared_memory_ref().rows == 4 and matrix.array is None
    with pytest.raises(matrixd.InvalidArgument):
        region.matrix(8, (4, 4))
    with pytest.raises(matrixd.InvalidArgument):
        region.matrix(4, (1, 1))


def test_aio_client_registers_with_the_same_checks(server, client):
    async def main():
        async with matrixd.aio.Client(server) as c:
            with pytest.raises(matrixd.Unimplemented, match="--backend=cuda"):
                await c.register_cuda_shared_memory("py-aio-gpu", HANDLE, 0, 1024)
            with pytest.raises(matrixd.InvalidArgument, match="raw_handle has 10 bytes"):
                await c.register_cuda_shared_memory("py-aio-gpu", b"x" * 10, 0, 1024)
            with client.shared_memory(4096, name="py-aio-taken"):
                with pytest.raises(matrixd.AlreadyExists, match="a system region"):
                    await c.register_cuda_shared_memory("py-aio-taken", HANDLE, 0, 1024)
                with pytest.raises(matrixd.NotFound, match="it is a system region"):
                    await c.unregister_cuda_shared_memory("py-aio-taken")
            with pytest.raises(matrixd.NotFound):
                await c.unregister_cuda_shared_memory("py-aio-never")
            return [info.name for info in await c.list_shared_memory()]

    names = asyncio.run(main())
    assert "py-aio-gpu" not in names and "py-aio-taken" not in names


def test_region_unregisters_through_an_aio_client_on_leaving():
    class Recorder:  # an aio client's unregister_cuda_shared_memory
        def __init__(self):
            self.unregistered = []

        async def unregister_cuda_shared_memory(self, name):
            self.unregistered.append(name)
            return 1

    recorder = Recorder()

    async def main():
        async with matrixd.CudaSharedRegion(recorder, "r", 0, 64) as region:
            assert region.matrix(0, (2, 2)).region is region
        return region

    region = asyncio.run(main())
    assert recorder.unregistered == ["r"] and region.closed
