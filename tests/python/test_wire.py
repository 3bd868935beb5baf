"""The package's pieces without a server: CRC32C, dtype conversion, row-major packing."""

import os

import numpy as np
import pytest

import matrixd
from matrixd import _crc32c, _ops, _wire


@pytest.mark.parametrize("size", [0, 1, 1023, 1024, 1025, 70000])
def test_numpy_crc32c_matches_the_module(size):
    data = os.urandom(size)
    assert _crc32c._numpy_crc32c(data) == _crc32c.crc32c(data)


def test_crc32c_check_value():
    assert _crc32c._numpy_crc32c(b"123456789") == 0xE3069283
    assert _crc32c.crc32c(b"123456789") == 0xE3069283


def test_fortran_and_strided_arrays_go_out_row_major():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    for view in (np.asfortranarray(a), a.T.copy().T, a.astype(">f8")):
        m, batch = _wire.to_matrix(view)
        assert (m.rows, m.cols, batch) == (3, 4, 0) and m.data == a.tobytes()


def test_a_batch_is_stacked_vertically():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    m, batch = _wire.to_matrix(a)
    assert (m.rows, m.cols, batch) == (6, 4, 2) and m.data == a.tobytes()
    np.testing.assert_array_equal(_wire.from_matrix(m, batch), a)


@pytest.mark.parametrize("given,want", [(np.int8, np.int64), (np.int32, np.int64),
                                        (np.uint16, np.int64), (np.bool_, np.int64),
                                        (np.float16, np.float32), (np.uint32, np.uint32),
                                        (np.complex64, np.complex64)])
def test_lossless_dtype_conversion(given, want):
    assert _wire.as_wire_array(np.ones((2, 2), dtype=given), "m").dtype == want


def test_uint64_is_refused():
    with pytest.raises(matrixd.InvalidArgument, match="m.dtype uint64 is not one of"):
        _wire.as_wire_array(np.ones((2, 2), dtype=np.uint64), "m")


def test_primes():
    assert [n for n in range(30) if _ops.is_prime(n)] == [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]
    assert _ops.is_prime(4611686018427387847) and not _ops.is_prime(4611686018427387849)


def download_chunks(data: bytes, crc: int, chunk: int = 5):
    from matrixd.v1 import matrixd_pb2
    for offset in range(0, len(data), chunk):
        yield matrixd_pb2.DownloadChunk(rows=2, cols=2, dtype=2, offset=offset,
                                        data=data[offset:offset + chunk])
    yield matrixd_pb2.DownloadChunk(offset=len(data), crc32c=crc)


def test_download_assembler_checks_the_crc_and_the_offsets():
    from matrixd import _transfer
    a = np.arange(4, dtype=np.float64).reshape(2, 2)
    good = _transfer.DownloadAssembler()
    for chunk in download_chunks(a.tobytes(), _crc32c.crc32c(a.tobytes())):
        good.add(chunk)
    np.testing.assert_array_equal(good.array(), a)
    bad = _transfer.DownloadAssembler()
    for chunk in download_chunks(a.tobytes(), _crc32c.crc32c(a.tobytes()) ^ 1):
        bad.add(chunk)
    with pytest.raises(matrixd.DataLoss, match="CRC32C"):
        bad.array()
    gap = _transfer.DownloadAssembler()
    chunks = list(download_chunks(a.tobytes(), 0))
    gap.add(chunks[0])
    with pytest.raises(matrixd.DataLoss, match="want 5"):
        gap.add(chunks[2])
