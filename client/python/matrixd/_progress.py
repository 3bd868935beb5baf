"""Progress bars for Job.wait(progress=True): tqdm when it is installed, else one stderr line."""

import sys

from matrixd.results import JobStatus


class _LineBar:
    def __init__(self, job_id: str):
        self._label = f"job {job_id[:8]}"

    def update(self, status: JobStatus) -> None:
        filled = int(status.progress * 30)
        eta = f", {status.eta_seconds:.0f} s left" if status.eta_seconds >= 0 else ""
        sys.stderr.write(f"\r{self._label} [{'#' * filled}{'.' * (30 - filled)}] "
                         f"{status.progress:6.1%} {status.state}{eta}   ")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")


class _TqdmBar:
    def __init__(self, job_id: str, tqdm):
        self._bar = tqdm(total=1.0, desc=f"job {job_id[:8]}",
                         bar_format="{desc}: {percentage:5.1f}%|{bar}| {postfix}")

    def update(self, status: JobStatus) -> None:
        self._bar.n = status.progress
        self._bar.set_postfix_str(status.state)

    def close(self) -> None:
        self._bar.close()


def bar(job_id: str):
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _LineBar(job_id)
    return _TqdmBar(job_id, tqdm)
