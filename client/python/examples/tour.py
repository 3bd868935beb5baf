"""A short tour of the matrixd Python client, notebook-style: run it against a running server.

    build/server/matrixd --listen=127.0.0.1:50051 --backend=cpu &
    PYTHONPATH=build/python /usr/bin/python3 client/python/examples/tour.py 127.0.0.1:50051
"""

import math
import sys
from fractions import Fraction

import numpy as np

import matrixd

target = sys.argv[1] if len(sys.argv) > 1 else "localhost:50051"
client = matrixd.Client(target, timeout=300)

# %% The Hilbert determinant exactly: scale H_n by L = lcm(1..2n-1) to integers, then
# det(H_n) = det(L * H_n) / L^n, with the exact integer determinant computed by the server.
n = 12
scale = math.lcm(*range(1, 2 * n))
scaled = np.array([[scale // (i + j + 1) for j in range(n)] for i in range(n)], dtype=np.int64)
exact = Fraction(client.det(scaled).exact, scale**n)
print(f"det(H_{n}) = 1/{1 / exact}")
approx = client.det(1.0 / (np.arange(n)[:, None] + np.arange(n) + 1.0))
print(f"float64 LU: {approx.mantissa:.6f}e{approx.exponent10}, exact {float(exact):.6e}")

# %% An LU factorization kept on the server, then solves against it without factorizing again.
rng = np.random.default_rng(1)
a = rng.standard_normal((500, 500))
with client.upload(a) as remote_a:
    lu = client.lu(remote_a, keep=True, keep_input=True).factorization
    for k in range(3):
        b = rng.standard_normal(500)
        solution = lu.solve(b, residual=True)
        print(f"solve {k}: |x - numpy| = {np.abs(solution.x - np.linalg.solve(a, b)).max():.2e}, "
              f"residual {solution.residual:.1e}")
    lu.release()

# %% A permanent of a 26x26 matrix with a progress bar (a job; cancel() would stop it).
job = client.submit("permanent", rng.uniform(0, 1, (26, 26)), method="glynn")
permanent = job.wait(progress=True)
print(f"per = {permanent.value:.6e} in {permanent.stats.seconds:.2f} s on {permanent.stats.device}")
client.close()
