"""The device host for unmodified rdma-core user space (irdma-sim host, irdma-sim exec).

A host (irdma-sim-host) simulates the device and serves its uverbs on a socket; commands
run under the shim (LD_PRELOAD), which gives them /dev/infiniband/uverbs0 backed by that
host, and SYSFS_PATH, where the host wrote the device's sysfs.
"""

import os
import socket
import subprocess
import tempfile

from irdma_sim._build_paths import DEVICE_HOST, UVERBS_SHIM
from irdma_sim._worker import die_with_parent


class HostError(RuntimeError):
    """The host could not be started or reached."""


def default_dir():
    """Where `irdma-sim host` listens unless told otherwise, and where `exec` looks first."""
    return os.path.join(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir(), f"irdma-sim-{os.getuid()}")


def socket_path(directory):
    return os.path.join(directory, "host.sock")


def sysfs_path(directory):
    return os.path.join(directory, "sysfs")


def listening(directory):
    """Whether a host answers at `directory`."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(socket_path(directory))
        return True
    except OSError:
        return False
    finally:
        s.close()


class DeviceHost:
    """A host process serving at `directory` until stop(); raises HostError if it does not come up."""

    def __init__(self, directory, config=None, out=None, timeout=60):
        os.makedirs(directory, exist_ok=True)
        self.directory = directory
        argv = [DEVICE_HOST, "--socket", socket_path(directory), "--sysfs", sysfs_path(directory)]
        if config:
            argv += ["--config", config]
        if out:
            argv += ["--out", out]
        env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
        parent = os.getpid()
        # The host goes with whoever started it, even one killed outright.
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                        preexec_fn=lambda: die_with_parent(parent))
        line = self.process.stdout.readline()
        if line.strip() != "ready":
            self.process.wait(timeout=timeout)
            raise HostError(self.process.stderr.read().strip() or f"irdma-sim-host exited with status {self.process.returncode}")

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def environment(directory, base=None):
    """The environment a command runs in to see the host at `directory`'s device."""
    env = dict(os.environ if base is None else base)
    preload = env.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = UVERBS_SHIM + (" " + preload if preload else "")
    env["IRDMA_SIM_HOST"] = socket_path(directory)
    env["SYSFS_PATH"] = sysfs_path(directory)
    return env


def run(argv, config=None, directory=None, out=None):
    """Runs `argv` against the host at `directory`, else the default one if it listens, else a
    private host of its own (writing its outputs to `out`); returns the command's exit status
    (128 + N when signal N ended it)."""
    if directory is None and config is None and out is None and listening(default_dir()):
        directory = default_dir()
    if directory is not None:
        if out is not None:
            raise HostError("--out is a private host's: the host at DIR writes its own (irdma-sim host --out)")
        if not listening(directory):
            raise HostError(f"no device host listens at {socket_path(directory)}")
        return _status(subprocess.call(argv, env=environment(directory)))
    with tempfile.TemporaryDirectory(prefix="irdma-sim-host-") as private, DeviceHost(private, config, out):
        return _status(subprocess.call(argv, env=environment(private)))


def _status(code):
    return 128 - code if code < 0 else code
