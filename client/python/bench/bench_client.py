"""Per-request overhead and transfer throughput of the Python client (docs/benchmarks.md).

    PYTHONPATH=build/python /usr/bin/python3 client/python/bench/bench_client.py HOST:PORT \
        [--requests 2000] [--mib 128] [--repeats 3]

Prints the latency of sequential det(n=8) calls (one in flight, like matrixctl load
--concurrency=1) and the throughput of uploading and downloading a float64 matrix of --mib MiB.
"""

import argparse
import time

import numpy as np

import matrixd
from matrixd import _ops


def latency(name, call, requests):
    for _ in range(100):  # warm up the channel
        call()
    seconds = []
    for _ in range(requests):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    s = np.array(seconds) * 1e6
    print(f"{name} x{requests}, 1 in flight: {requests / (s.sum() / 1e6):.0f} req/s, "
          f"p50 {np.percentile(s, 50):.0f} us, p90 {np.percentile(s, 90):.0f} us, "
          f"p99 {np.percentile(s, 99):.0f} us")


def det_latency(client, requests):
    """client.det (numpy in, result object out) and the bare generated stub on a prebuilt
    request: the difference is what the client layer adds."""
    a = np.random.default_rng(1).standard_normal((8, 8))
    latency("client.det n=8", lambda: client.det(a), requests)
    request = _ops.determinant(a).request
    latency("stub Determinant n=8", lambda: client._stub.Determinant(request), requests)


def transfers(client, mib, repeats):
    n = int(round((mib * 2**20 / 8) ** 0.5))
    a = np.random.default_rng(2).standard_normal((mib * 2**20 // 8 // n, n))
    for _ in range(repeats):
        start = time.perf_counter()
        remote = client.upload(a)
        up = time.perf_counter() - start
        start = time.perf_counter()
        back = remote.download()
        down = time.perf_counter() - start
        assert back.tobytes() == a.tobytes()
        remote.release()
        print(f"{a.nbytes / 2**20:.0f} MiB {a.shape}: upload {up:.2f} s = "
              f"{a.nbytes / up / 2**20:.0f} MiB/s, download {down:.2f} s = "
              f"{a.nbytes / down / 2**20:.0f} MiB/s")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("target")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--mib", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with matrixd.Client(args.target) as client:
        det_latency(client, args.requests)
        transfers(client, args.mib, args.repeats)


if __name__ == "__main__":
    main()
