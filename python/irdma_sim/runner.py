"""Runs scenarios, each in its own Python process, and reads back their reports.

A run's process lives in a session of its own and dies with its parent: Ctrl-C or SIGTERM
reaching this process is passed on to every run under way, each stops its traffic and
completes its outputs (the report says it was interrupted), and only then does the
interruption go on here. A second Ctrl-C kills them.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# Exit statuses of a run's process (the C++ runner's too).
PASSED, FAILED, SCENARIO_ERROR, RUN_ERROR = 0, 1, 2, 3
INTERRUPTED = {128 + signal.SIGINT, 128 + signal.SIGTERM}


class RunFailed(RuntimeError):
    """A scenario could not run: malformed file, or the simulation itself failed."""

    def __init__(self, scenario, returncode, stderr):
        # A scenario error already names the file (and the line).
        super().__init__(stderr.strip() or f"{scenario}: exit status {returncode}")
        self.scenario = scenario
        self.returncode = returncode
        self.stderr = stderr


class RunInterrupted(RunFailed):
    """A run stopped by an interruption before it had made a report (it had not begun)."""


class Terminated(BaseException):
    """SIGTERM reached this process (once install_sigterm() made it an exception)."""


def install_sigterm():
    """Makes SIGTERM raise Terminated in the main thread, so runs under way stop cleanly."""

    def terminated(signum, frame):
        raise Terminated()

    signal.signal(signal.SIGTERM, terminated)


def signal_of(exc):
    return signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT


class _Runs:
    """The run processes alive now, so an interruption reaches each of them once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.live = set()
        self.stopping = None  # the signal passed on, once one was

    def start(self, cmd, **popen_args):
        with self.lock:
            if self.stopping:
                raise KeyboardInterrupt() if self.stopping == signal.SIGINT else Terminated()
            proc = subprocess.Popen(cmd, start_new_session=True, **popen_args)
            self.live.add(proc)
            return proc

    def done(self, proc):
        with self.lock:
            self.live.discard(proc)

    def stop_all(self, sig):
        """Passes `sig` on to every run and lets no new one start."""
        with self.lock:
            self.stopping = sig
            for proc in self.live:
                proc.stopped_by = sig
                proc.send_signal(sig)

    def kill_all(self):
        with self.lock:
            for proc in self.live:
                proc.kill()

    def reset(self):
        with self.lock:
            self.stopping = None


RUNS = _Runs()


def stop_runs(exc, wait):
    """An interruption here (`exc`): every run under way gets its signal and completes its
    outputs, `wait()` waits for them, and a second interruption meanwhile kills them."""
    RUNS.stop_all(signal_of(exc))
    try:
        wait()
    except (KeyboardInterrupt, Terminated):
        RUNS.kill_all()
        wait()
        raise
    finally:
        RUNS.reset()


def run(scenario, out, seed=None, trace=True, timeout=None, progress=None, backend="sim", record=False,
        cq_writer=None, trace_format="bin"):
    """Runs `scenario` into directory `out` in a child process; returns report.json as a dict.

    `backend` says where the device is: "sim" (simulated in the child), "vfio-user" (served by
    a process of the child's own, the driver on the child's threads), "vfio-user:SOCKET"
    (served there already, e.g. by `irdma-sim serve`) or "vfio:DDDD:BB:DD.F" (a function bound
    to vfio-pci: silicon; no trace).

    Check failures are in the report (report["passed"] is False), and so is an interrupted
    run (report["interrupted"] names the signal). RunFailed is raised only when no report
    could be made. `progress`, if given, is called with a line of text about twice a second.
    KeyboardInterrupt or Terminated here stop the run cleanly before they go on; past
    `timeout` seconds the run is stopped the same way and subprocess.TimeoutExpired raised.
    `record` also writes what `replay` needs (stimulus.jsonl and scenario.yaml). `cq_writer`
    ("tlm", "rtl" or "rtl:model") replaces the scenario's device.cq_writer. `trace_format`:
    "bin" (trace.bin, which `irdma_sim.trace` reads and converts) or "jsonl" (trace.jsonl).
    """
    if trace_format not in ("bin", "jsonl"):
        raise ValueError(f"trace_format must be 'bin' or 'jsonl', not {trace_format!r}")
    cmd = [sys.executable, "-m", "irdma_sim._worker", str(scenario), str(out),
           "" if seed is None else str(seed), trace_format if trace else "no-trace",
           "progress" if progress else "quiet", backend, "record" if record else "no-record", cq_writer or "",
           str(os.getpid())]
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    with tempfile.TemporaryFile("w+", encoding="utf-8") as err:
        proc = RUNS.start(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        try:
            reader = threading.Thread(target=_relay_progress, args=(proc.stdout, progress), daemon=True)
            reader.start()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGTERM)  # it completes its outputs
                proc.wait()
                raise
            except (KeyboardInterrupt, Terminated) as e:
                stop_runs(e, proc.wait)
                raise
            reader.join()
        finally:
            RUNS.done(proc)
        err.seek(0)
        stderr = err.read()
    report = Path(out) / "report.json"
    stopped_by = getattr(proc, "stopped_by", None)
    if stopped_by and not report.exists():
        raise RunInterrupted(str(scenario), proc.returncode,
                             f"{scenario}: {signal.Signals(stopped_by).name} came before the run began")
    if proc.returncode not in (PASSED, FAILED, *INTERRUPTED) or not report.exists():
        if proc.returncode < 0:
            stderr += f"\n{scenario}: the run's process was killed by signal {-proc.returncode}"
        raise RunFailed(str(scenario), proc.returncode, stderr)
    with open(report, encoding="utf-8") as f:
        return json.load(f)


class ReplayFailed(RuntimeError):
    """The directory could not be replayed (no recording, a malformed one): the reason."""


def replay(run_dir, formatter=None, flip_cqe_bit=-1, cq_writer=None):
    """Replays a run recorded with record=True into the device alone, in a child process;
    returns {identical, difference, mmio, reads, writes, msix, cut_at_line}: whether every write and MSI-X
    the device made was the recording's, and the first that was not. `formatter` ("tlm" or
    "rtl") replaces the recorded run's; `flip_cqe_bit` (0-255) replays a deliberately changed
    device, a bit of every CQE's main half flipped, to check that a difference is found.
    cut_at_line: the line a killed run left unfinished (compared up to there), or 0. `cq_writer`
    ("tlm", "rtl" or "rtl:model") replaces the recorded run's CQ writer."""
    cmd = [sys.executable, "-m", "irdma_sim._worker", "--replay", str(run_dir), formatter or "", str(flip_cqe_bit),
           cq_writer or "", str(os.getpid())]
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise ReplayFailed(proc.stderr.strip() or f"the replay's process ended with status {proc.returncode}")
    # The verdict is the last line; SystemC may print its own warnings to stdout before it.
    lines = proc.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, ValueError):
        raise ReplayFailed(f"the replay's process printed no verdict: {proc.stdout.strip()!r}") from None


def _relay_progress(stream, progress):
    for line in stream:
        if progress and line.startswith("progress "):
            progress(line[len("progress "):].rstrip("\n"))


def run_many(jobs, workers=None):
    """Runs (scenario, out, seed) jobs in parallel processes; returns their reports in order."""
    pool = ThreadPoolExecutor(max_workers=workers or os.cpu_count())
    try:
        return list(pool.map(lambda job: run(*job), jobs))
    except (KeyboardInterrupt, Terminated) as e:
        stop_runs(e, lambda: pool.shutdown(wait=True, cancel_futures=True))
        raise
    finally:
        pool.shutdown(wait=True)
