"""Sweeps on a Dask distributed cluster (Debian's python3-distributed): the same jobs as a
local sweep, each still a process of its own, started by a worker instead of by a thread
here; outcomes gathered in submission order as a local sweep's are.

The workers must reach this build (its `irdma_sim` package and binaries) and the scenario
files at the same paths, and write to the output directory: a shared filesystem, as on
any cluster that runs builds.
"""

import os
import uuid
from pathlib import Path

from distributed import Client, LocalCluster


class ClusterError(RuntimeError):
    """The scheduler could not be reached or the cluster not started."""


class _Future:
    """A Dask future with the few calls the sweep makes of a concurrent.futures one."""

    def __init__(self, future):
        self.future = future

    def result(self):
        return self.future.result()

    def cancelled(self):
        return self.future.cancelled()

    def exception(self):
        if self.future.cancelled():
            return None
        return self.future.exception()


class DaskPool:
    """`address`: a scheduler's ("tcp://host:8786"), or "local" for a LocalCluster of
    `workers` single-threaded worker processes on this machine (default: one per CPU)."""

    def __init__(self, address, workers=None):
        self.cluster = None
        try:
            if address == "local":
                self.cluster = LocalCluster(n_workers=workers or os.cpu_count(), threads_per_worker=1, processes=True,
                                            dashboard_address=None, silence_logs=40)
                self.client = Client(self.cluster)
            else:
                self.client = Client(address, timeout="10s")
        except (OSError, TimeoutError, ValueError) as e:
            if self.cluster:
                self.cluster.close()
            raise ClusterError(f"cannot reach the Dask scheduler at {address}: {e}") from None
        self.futures = []

    def workers(self):
        return len(self.client.scheduler_info()["workers"])

    def submit(self, fn, job, *args):
        scenario, name, seed, out = job
        # A worker's working directory is its own: paths go absolute.
        job = (str(Path(scenario).resolve()), name, seed, Path(out).resolve())
        # Keys name the run and are unique: two sweeps on one scheduler share no task.
        key = f"irdma-sim-{name}-seed{seed}-{uuid.uuid4().hex[:12]}"
        future = _Future(self.client.submit(fn, job, *args, pure=False, key=key))
        self.futures.append(future)
        return future

    def shutdown(self, wait=True, cancel_futures=False):
        if cancel_futures:
            # Runs not started never start; those under way on a LocalCluster stop with its
            # workers (a run dies with the process that started it, completing its outputs).
            self.client.cancel([f.future for f in self.futures if not f.future.done()])
        self.client.close()
        if self.cluster:
            self.cluster.close()
