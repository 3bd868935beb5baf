"""The examples run, and the package installs with pip from the checkout with nothing downloaded."""

import os
import pathlib
import subprocess
import sys

PYTHON_CLIENT = pathlib.Path(__file__).resolve().parents[2] / "client/python"


def test_tour_runs(server):
    done = subprocess.run([sys.executable, str(PYTHON_CLIENT / "examples/tour.py"), server],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "det(H_12) = 1/3791065794363045171518854790347963918801886878641184641043243047321" \
           "60000000000" in done.stdout
    assert "succeeded" in done.stderr and done.stdout.count("residual") == 3


def test_pip_installs_into_a_system_site_packages_venv(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    subprocess.run([str(venv / "bin/pip"), "install", "-q", "--no-index", "--no-build-isolation",
                    str(PYTHON_CLIENT)], check=True, cwd=tmp_path, timeout=300)
    probe = ("import matrixd, matrixd.aio, matrixd.v1.matrixd_pb2_grpc as g; "
             "print(matrixd.__file__); print(g.MatrixServiceStub.__name__)")
    # Without PYTHONPATH (ctest points it at build/python): the venv's own copy must answer.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([str(venv / "bin/python"), "-c", probe], capture_output=True,
                          text=True, check=True, cwd=tmp_path, env=env)
    assert str(venv) in done.stdout and "MatrixServiceStub" in done.stdout
