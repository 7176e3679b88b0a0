"""The device served over vfio-user and the driver on OS threads in another process: `run
--backend vfio-user` (a server child per run), `serve` + `--backend vfio-user:SOCKET`, and the
ends a bring-up engineer meets: a server that dies mid-run, a client that vanishes, nobody
listening, a backend that does not exist."""

import contextlib
import json
import os
import signal
import socket as pysocket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from irdma_sim.trace import lines as trace_lines


def cli(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "irdma_sim", *args], capture_output=True, text=True,
                          timeout=120, **kwargs)


def serve(socket, *args):
    proc = subprocess.Popen([sys.executable, "-m", "irdma_sim", "serve", "--socket", str(socket), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while not Path(socket).exists():
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "the server never listened"
        time.sleep(0.01)
    return proc


@contextlib.contextmanager
def serving(socket, *args):
    """A server at `socket` for the block's length, stopped with Ctrl-C after it."""
    server = serve(socket, *args)
    try:
        yield server
    finally:
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=10) == 0


def long_scenario(tmp_path, pairs=1):
    """A scenario whose traffic outlasts any test: something must stop it."""
    path = tmp_path / "long.yaml"
    path.write_text(f"name: long\nqp_pairs: [{{name: p, count: {pairs}, sq_depth: 32, rq_depth: 32}}]\n"
                    "traffic: {sends_per_qp: 100000000}\n")
    return path


def run_vfio_user(scenario_path, out, **popen_args):
    """irdma-sim-run itself (no Python between): its children are the run's server."""
    runner = Path(os.environ["IRDMA_SIM_BIN"]).parent / "model" / "system" / "irdma-sim-run"
    return subprocess.Popen([str(runner), str(scenario_path), "--out", str(out), "--no-trace", "--backend", "vfio-user"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen_args)


def children(pid):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def test_a_run_with_its_own_server_child_passes_every_check(tmp_path, scenario):
    proc = cli("run", scenario("events.yaml"), "--out", str(tmp_path), "--backend", "vfio-user")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    names = {c["name"] for c in report["checks"]}
    assert {"every_ceqe_consumed_and_acknowledged", "cqes_written_equal_completions_delivered"} <= names
    assert report["counts"]["cqes_written"] > 0 and report["counts"]["msix_delivered"] > 0
    # The served device wrote the run's transaction log, the configuration space included.
    first = json.loads(next(trace_lines(tmp_path / "trace.bin")))
    assert first["ev"] == "cfg_read"


def test_attached_to_a_served_device_runs_and_the_server_serves_the_next_client(tmp_path, scenario):
    socket = tmp_path / "dev.sock"
    server = serve(socket, "--config", scenario("rdma_ops.yaml"))
    try:
        for n in range(2):
            out = tmp_path / f"run{n}"
            proc = cli("run", scenario("rdma_ops.yaml"), "--out", str(out), "--backend", f"vfio-user:{socket}")
            assert proc.returncode == 0, proc.stdout + proc.stderr
            assert not (out / "trace.bin").exists(), "the server keeps the log"
            warnings = json.loads((out / "report.json").read_text())["warnings"]
            assert any(w.startswith(f"no trace.bin: backend vfio-user:{socket} has no transaction log here")
                       for w in warnings), warnings
    finally:
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=10) == 0


def test_a_client_killed_mid_run_leaves_the_server_serving(tmp_path, scenario):
    socket = tmp_path / "dev.sock"
    server = serve(socket)
    try:
        victim = subprocess.Popen([sys.executable, "-m", "irdma_sim", "run", str(long_scenario(tmp_path)), "--out",
                                   str(tmp_path / "victim"), "--backend", f"vfio-user:{socket}"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(1.5)
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
        proc = cli("run", scenario("smoke.yaml"), "--out", str(tmp_path / "next"), "--backend", f"vfio-user:{socket}")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert server.poll() is None
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)


def test_a_server_that_dies_mid_run_is_a_clear_error_soon(tmp_path):
    proc = run_vfio_user(long_scenario(tmp_path, pairs=2), tmp_path / "out")
    deadline = time.monotonic() + 10
    while not children(proc.pid):
        assert time.monotonic() < deadline, "no server child"
        time.sleep(0.01)
    time.sleep(1)
    os.kill(children(proc.pid)[0], signal.SIGKILL)
    killed = time.monotonic()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 3
    assert "the device server ended during the run (killed by signal 9" in err
    assert time.monotonic() - killed < 10


def test_nobody_listening_and_an_unknown_backend_are_said_plainly(tmp_path, scenario):
    start = time.monotonic()
    proc = cli("run", scenario("smoke.yaml"), "--out", str(tmp_path), "--backend", f"vfio-user:{tmp_path}/none.sock")
    assert proc.returncode == 2
    assert "nobody accepted a connection at" in proc.stderr and "none.sock" in proc.stderr
    assert time.monotonic() - start < 30
    proc = cli("run", scenario("smoke.yaml"), "--out", str(tmp_path), "--backend", "pcie")
    assert proc.returncode == 2
    assert "'pcie' is none of sim, vfio-user, vfio-user:SOCKET" in proc.stderr


def test_the_kernel_vfio_backend_says_what_is_wrong_on_a_host_without_the_device(tmp_path, scenario):
    """The guest test (CTest label qemu) drives functions bound to vfio-pci; here, the ends a
    bring-up engineer meets first: a malformed address, an absent one, a function not ready."""
    proc = cli("run", scenario("smoke.yaml"), "--out", str(tmp_path), "--backend", "vfio:00:1f")
    assert proc.returncode == 2
    assert "'vfio:00:1f': vfio: takes a PCI address, DDDD:BB:DD.F" in proc.stderr
    proc = cli("run", scenario("smoke.yaml"), "--out", str(tmp_path), "--backend", "vfio:0000:ff:1f.7")
    assert proc.returncode == 2
    assert "vfio 0000:ff:1f.7: no such PCI function; `lspci -D` lists the addresses present" in proc.stderr
    assert not (tmp_path / "report.json").exists()
    present = sorted(os.listdir("/sys/bus/pci/devices"))
    if present:  # every host has some function; none of them is ready for VFIO here
        runner = Path(os.environ["IRDMA_SIM_BIN"]).parent / "model" / "system" / "irdma-sim-run"
        proc = subprocess.run([str(runner), scenario("smoke.yaml"), "--out", str(tmp_path), "--backend",
                               f"vfio:{present[0]}"], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 3, proc.stderr
        line = proc.stderr.strip()
        assert line.startswith(f"irdma-sim-run: vfio {present[0]}: ") and "\n" not in line
        assert any(why in line for why in ("the IOMMU is off", "not vfio-pci", "cannot open", "is not viable")), line
    proc = cli("sweep", scenario("smoke.yaml"), "--seeds", "1-2", "--out", str(tmp_path / "sweep"), "--jobs", "2",
               "--backend", "vfio:0000:ff:1f.7")
    assert proc.returncode == 2
    assert "vfio:0000:ff:1f.7 is one device: the runs take turns on it (--jobs 1)" in proc.stderr
    assert proc.stdout.count("no such PCI function") == 2


def test_serve_refuses_a_malformed_configuration(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("config:\n  device: {num_ceqs: 5000}\n")
    proc = cli("serve", "--socket", str(tmp_path / "s.sock"), "--config", str(bad))
    assert proc.returncode == 2
    assert "num_ceqs" in proc.stderr


@pytest.mark.parametrize("case", ["missing config", "unservable config", "unbindable socket"])
def test_serve_says_what_is_wrong_before_serving_and_exits_2(case, tmp_path, scenario):
    socket, config = tmp_path / "s.sock", None
    if case == "missing config":
        config, expect = tmp_path / "none.yaml", "cannot read the file"
    elif case == "unservable config":
        config, expect = scenario("link_faults.yaml"), "a served model cannot carry these"
    else:
        socket, expect = tmp_path / "no-such-dir" / "s.sock", "bind to"
    proc = cli("serve", "--socket", str(socket), *(["--config", str(config)] if config else []))
    assert proc.returncode == 2, proc.stderr
    assert expect in proc.stderr and "serving" not in proc.stderr, proc.stderr
    assert not Path(socket).exists()


def test_a_second_server_at_a_served_socket_is_refused_and_the_first_serves_on(tmp_path, scenario):
    socket = tmp_path / "dev.sock"
    with serving(socket):
        proc = cli("serve", "--socket", str(socket))
        assert proc.returncode == 2
        assert f"another server is listening at '{socket}'" in proc.stderr and "serving" not in proc.stderr
        assert socket.exists(), "the refused server left the first one's socket alone"
        run = cli("run", scenario("events.yaml"), "--out", str(tmp_path / "run"), "--no-trace",
                  "--backend", f"vfio-user:{socket}")
        assert run.returncode == 0, run.stdout + run.stderr
    assert not socket.exists()


def test_a_dead_servers_socket_is_taken_over(tmp_path, scenario):
    socket = tmp_path / "dev.sock"
    dead = serve(socket)
    dead.kill()
    dead.wait(timeout=10)
    assert socket.exists(), "SIGKILL leaves the socket file behind"
    # Its device process, which holds the listening socket too, follows it (PDEATHSIG).
    deadline = time.monotonic() + 10
    while True:
        probe = pysocket.socket(pysocket.AF_UNIX, pysocket.SOCK_STREAM)
        try:
            probe.connect(str(socket))
        except ConnectionRefusedError:
            break
        finally:
            probe.close()
        assert time.monotonic() < deadline, "the dead server's device process still listens"
        time.sleep(0.05)
    with serving(socket) as server:  # the stale file was there already: listening is said
        assert "serving the device at" in server.stderr.readline()
        run = cli("run", scenario("events.yaml"), "--out", str(tmp_path / "run"), "--no-trace",
                  "--backend", f"vfio-user:{socket}")
        assert run.returncode == 0, run.stdout + run.stderr


def test_a_device_without_a_backdoor_refuses_faults_by_name_and_runs_the_rest(tmp_path, scenario):
    socket = tmp_path / "dev.sock"
    server = serve(socket, "--no-backdoor")
    try:
        proc = cli("run", scenario("errors_flush.yaml"), "--out", str(tmp_path / "faults"),
                   "--backend", f"vfio-user:{socket}")
        assert proc.returncode == 2
        assert "key 'faults': faults on request need a device with a backdoor" in proc.stderr
        proc = cli("run", scenario("smoke.yaml"), "--out", str(tmp_path / "smoke"), "--backend", f"vfio-user:{socket}")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        report = json.loads((tmp_path / "smoke" / "report.json").read_text())
        names = {c["name"] for c in report["checks"]}
        assert "no_dma_memory_left_mapped" in names and "payload_integrity" in names
        assert "cqes_written_equal_completions_delivered" not in names, "it needs the device's counters"
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)


def test_ctrl_c_stops_a_vfio_user_run_cleanly_with_its_report(tmp_path):
    # As a terminal does: the signal goes to the run's whole process group.
    proc = run_vfio_user(long_scenario(tmp_path), tmp_path / "out", start_new_session=True)
    time.sleep(1.5)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGINT, err
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["interrupted"]["signal"] == "SIGINT"
    assert all(c["passed"] for c in report["checks"] if c["name"] not in ("interrupted",)), \
        [c for c in report["checks"] if not c["passed"]]


def test_two_clients_at_once_are_served_one_after_the_other(tmp_path, scenario):
    socket = tmp_path / "dev.sock"
    server = serve(socket)
    try:
        runs = [subprocess.Popen([sys.executable, "-m", "irdma_sim", "run", scenario("smoke.yaml"), "--out",
                                  str(tmp_path / f"run{n}"), "--backend", f"vfio-user:{socket}"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in range(2)]
        for run in runs:
            out, err = run.communicate(timeout=60)
            assert run.returncode == 0, out + err
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)


def test_serve_trace_files_are_one_per_client_served(tmp_path, scenario):
    """--trace F keeps client 1's log in F and client N's in F.N; the device waiting for the
    next client when the server stops leaves no empty file behind."""
    socket, trace = tmp_path / "dev.sock", tmp_path / "dev.jsonl"
    with serving(socket, "--trace", str(trace)):
        for n in range(2):
            run = cli("run", scenario("events.yaml"), "--out", str(tmp_path / f"run{n}"), "--no-trace",
                      "--backend", f"vfio-user:{socket}")
            assert run.returncode == 0, run.stdout + run.stderr
        time.sleep(0.5)  # the device for client 3 is up and waiting
    assert sorted(p.name for p in tmp_path.glob("dev.jsonl*")) == ["dev.jsonl", "dev.jsonl.2"]
    assert all(p.stat().st_size > 0 for p in tmp_path.glob("dev.jsonl*"))


def test_a_served_device_other_than_the_scenarios_is_said(tmp_path, scenario):
    """The device is what it is (the driver reads its caps): another generation is refused,
    other sizes run on the device's and say so."""
    gen3 = tmp_path / "gen3.sock"
    with serving(gen3, "--config", scenario("gen3.yaml")):
        proc = cli("run", scenario("smoke.yaml"), "--out", str(tmp_path / "g"), "--no-trace",
                   "--backend", f"vfio-user:{gen3}")
        assert proc.returncode == 2
        assert "config.device.generation is 2 but the device is GEN_3" in proc.stderr, proc.stderr
    config = tmp_path / "bigger.yaml"
    config.write_text("config: {device: {num_ceqs: 3, max_cqe: 500}}\n")
    sized = tmp_path / "sized.sock"
    with serving(sized, "--config", str(config)):
        proc = cli("run", scenario("smoke.yaml"), "--out", str(tmp_path / "s"), "--no-trace",
                   "--backend", f"vfio-user:{sized}")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        warnings = json.loads((tmp_path / "s" / "report.json").read_text())["warnings"]
        assert "config.device.num_ceqs is 2 but the device has 3 completion vectors: the run used the device's" in warnings
        assert "config.device.max_cqe is 300 but the device reports 500: the run used the device's" in warnings


def test_vectors_beyond_the_devices_are_said_folded(tmp_path):
    path = tmp_path / "fold.yaml"
    path.write_text("name: fold\nconfig: {device: {num_ceqs: 4}, host: {cpus: 2}}\n"
                    "qp_pairs:\n  - {name: far, cq_vector: 3, sq_depth: 8, rq_depth: 8}\n"
                    "  - {name: own_far, cq: own, cq_vector: 5, sq_depth: 8, rq_depth: 8}\n"
                    "traffic: {sends_per_qp: 50}\n")
    proc = cli("run", str(path), "--out", str(tmp_path / "out"), "--no-trace")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    warnings = json.loads((tmp_path / "out" / "report.json").read_text())["warnings"]
    assert warnings == [
        "qp_pairs far: cq_vector 3 folded onto vector 1 (the pool spreads over 2: the device's 4 completion "
        "vectors, at most one per CPU)",
        "qp_pairs own_far: cq_vector 5 is beyond the device's 4 completion vectors: its CQ went to vector 0"]


def run_pcie(*args):
    """irdma-sim-run-pcie: the runner for a device on PCIe, with no simulator in its process."""
    runner = Path(os.environ["IRDMA_SIM_BIN"]).parent / "model" / "testbench" / "irdma-sim-run-pcie"
    return subprocess.run([str(runner), *map(str, args)], capture_output=True, text=True, timeout=120)


def test_the_pcie_runner_links_no_simulator():
    runner = Path(os.environ["IRDMA_SIM_BIN"]).parent / "model" / "testbench" / "irdma-sim-run-pcie"
    libs = subprocess.run(["ldd", str(runner)], capture_output=True, text=True, check=True).stdout
    assert "libyaml-cpp" in libs, libs  # ldd read it
    assert "systemc" not in libs and "verilated" not in libs, libs


def test_the_pcie_runner_drives_a_served_device(scenario, tmp_path):
    sock = tmp_path / "dev.sock"
    with serving(sock):
        proc = run_pcie(scenario("smoke.yaml"), "--out", tmp_path / "out", "--backend", f"vfio-user:{sock}", "--seed", 3)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["passed"] and report["seed"] == 3 and report["counts"]["completions_delivered"] > 0
    assert not (tmp_path / "out" / "trace.bin").exists()  # the server keeps the device's log


@pytest.mark.parametrize("args,error", [
    ([], "no device given (--backend)"),
    (["--out", "o", "--backend", "vfio:x"], "no scenario given"),
    (["smoke.yaml", "--out", "o"], "no device given (--backend)"),
    (["smoke.yaml", "--out", "o", "--backend", "sim"], "irdma-sim-run runs it"),
    (["smoke.yaml", "--out", "o", "--backend", "vfio-user"], "irdma-sim-run runs it"),
    (["smoke.yaml", "--out", "o", "--backend", "tcp:1"], "unknown backend 'tcp:1' (vfio-user:SOCKET or vfio:"),
    (["smoke.yaml", "--out", "o", "--backend", "vfio:x", "--record"], "--record needs the sim backend"),
    (["smoke.yaml", "--out", "o", "--seed", "-1"], "--seed must be a number"),
    (["smoke.yaml", "--out", "o", "--replay", "d"], "unexpected argument '--replay'"),
])
def test_the_pcie_runner_refuses_bad_usage(args, error, scenario, tmp_path):
    args = [scenario(a) if a == "smoke.yaml" else tmp_path / a if a == "o" else a for a in args]
    proc = run_pcie(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert error in proc.stderr and "usage: irdma-sim-run-pcie" in proc.stderr, proc.stderr


def test_the_cli_runs_a_device_on_pcie_with_no_simulator_in_the_run(tmp_path):
    sock = tmp_path / "dev.sock"
    with serving(sock):
        proc = subprocess.Popen([sys.executable, "-m", "irdma_sim", "run", str(long_scenario(tmp_path)), "--out",
                                 str(tmp_path / "out"), "--backend", f"vfio-user:{sock}"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            deadline = time.monotonic() + 20
            while not (tmp_path / "out" / "completions.jsonl").exists() or not children(proc.pid):
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
                time.sleep(0.05)
            run = children(proc.pid)[0]
            maps = Path(f"/proc/{run}/maps").read_text()
            assert os.readlink(f"/proc/{run}/exe").endswith("irdma-sim-run-pcie")
            assert "libsystemc" not in maps and "_irdma_sim" not in maps
        finally:
            os.killpg(proc.pid, signal.SIGINT)
            out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGINT, out + err
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["interrupted"]["signal"] == "SIGINT" and report["counts"]["completions_delivered"] > 0


@pytest.mark.parametrize("runner", ["model/system/irdma-sim-run", "model/testbench/irdma-sim-run-pcie"])
def test_the_runners_print_their_usage_on_help(runner):
    binary = Path(os.environ["IRDMA_SIM_BIN"]).parent / runner
    for flag in ("--help", "-h"):
        proc = subprocess.run([str(binary), flag], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0 and proc.stdout.startswith(f"usage: {binary.name} "), proc.stdout + proc.stderr


def test_progress_of_a_run_on_pcie_reaches_the_caller(tmp_path):
    import irdma_sim
    path = tmp_path / "medium.yaml"
    path.write_text("name: medium\nqp_pairs: [{name: p, count: 2, sq_depth: 32, rq_depth: 32}]\n"
                    "traffic: {sends_per_qp: 40000}\n")
    sock = tmp_path / "dev.sock"
    lines = []
    with serving(sock):
        report = irdma_sim.run(path, tmp_path / "out", backend=f"vfio-user:{sock}", progress=lines.append)
    assert report["passed"], report["checks"]
    assert lines and all("completions" in line for line in lines), lines
