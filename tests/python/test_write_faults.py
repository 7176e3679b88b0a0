"""CQE, CEQE and AEQE writes the host refuses (config.link.faults.*_write_error_rate), as a
validation engineer uses them: the shipped scenario holds over seeds 1-20, each kind strikes
in some seed, every refusal is reported and the device given up once; runs that cannot carry
them refuse them."""

import os
import subprocess

import pytest

import irdma_sim

from conftest import failed_checks, passing_runs
from irdma_sim.trace import lines as trace_lines


def test_every_refused_write_gives_the_device_up_once_over_seeds_1_to_20(scenario, tmp_path):
    struck = {"cqe_writes_failed": 0, "ceqe_writes_failed": 0, "aeqe_writes_failed": 0}
    for seed, report in passing_runs(scenario("write_faults.yaml"), tmp_path, range(1, 21)):
        counts = report["counts"]
        for kind in struck:
            struck[kind] += counts[kind]
        refused = sum(counts[kind] for kind in struck)
        if refused:
            assert counts["pci_errors"] == refused and counts["device_resets_requested"] == 1, counts
            assert counts["device_fatal_events"] == 1
            assert "every_refused_write_reported" in {c["name"] for c in report["checks"]}
    assert all(n > 0 for n in struck.values()), struck


def test_a_refused_cqe_is_traced_where_it_struck_and_its_work_flushed(variant, tmp_path):
    text = ("cqe_write_error_rate: 0.0005\n      ceqe_write_error_rate: 0\n      aeqe_write_error_rate: 0\n"
            "      shadow_read_error_rate: 0")
    path = variant("write_faults.yaml",
                   "cqe_write_error_rate: 0.00005\n      ceqe_write_error_rate: 0.0002\n"
                   "      aeqe_write_error_rate: 0.5\n      shadow_read_error_rate: 0.0005", text)
    report = irdma_sim.run(path, tmp_path / "out", seed=1)
    assert report["passed"], failed_checks(report)
    assert report["counts"]["cqe_writes_failed"] == 1, report["counts"]
    by_status = {s["name"]: s["count"] for s in report["counts"]["by_status"]}
    assert by_status["IB_WC_WR_FLUSH_ERR"] > 0
    trace = "\n".join(trace_lines(tmp_path / "out" / "trace.bin"))
    assert '"ev":"dma_write_fault","purpose":"cqe_write","cq":' in trace


@pytest.mark.parametrize("old,new,message", [
    ("cqe_write_error_rate: 0.00005", "cqe_write_error_rate: 2", "config.link.faults.cqe_write_error_rate"),
    ("aeqe_write_error_rate: 0.5", "aeqe_write_eror_rate: 0.5", "unknown key"),
])
def test_bad_write_fault_settings_are_scenario_errors(old, new, message, refused_variant):
    stderr = refused_variant("write_faults.yaml", old, new)
    assert message in stderr, stderr


@pytest.mark.parametrize("args,message", [
    (["--record"], "--record with link.faults"),
    (["--backend", "vfio-user"], "a served model cannot tell"),
    (["--backend", "vfio:0000:00:00.0"], "is silicon"),
])
def test_runs_that_cannot_carry_refused_writes_refuse_them(args, message, refused_run):
    stderr = refused_run("write_faults.yaml", *args)
    assert message in stderr, stderr


@pytest.mark.parametrize("key", ["aeqe_write_error_rate", "payload_write_poison_rate"])
def test_a_served_model_refuses_refused_and_poisoned_writes(key, tmp_path):
    # Served alone, as `irdma-sim serve` does: no root port to report them to the client's host.
    config = tmp_path / "config.yaml"
    config.write_text("link:\n  faults: {%s: 0.1}\n" % key)
    serve = os.path.join(os.environ["IRDMA_SIM_BIN"], "..", "model", "system", "irdma-sim-serve")
    proc = subprocess.run([serve, "--socket", str(tmp_path / "s.sock"), "--config", str(config), "--once"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "config.link.faults.%s: a served model has no root port" % key in proc.stderr, proc.stderr
    assert "serving at" not in proc.stderr


def test_a_refused_extended_half_of_a_64_byte_cqe_is_read_stale_and_counted(tmp_path):
    # GEN_3's 64-byte slots: an extended half refused where the slot's last one was written
    # two passes before keeps the current valid bit, so the driver (as irdma) reads it with
    # the main half. The scoreboard counts the stale immediate data instead of failing.
    path = tmp_path / "gen3_refused.yaml"
    path.write_text(
        "name: gen3_refused\nseed: 1\nconfig:\n  device: {generation: 3, num_ceqs: 2}\n"
        "  link:\n    faults: {cqe_write_error_rate: 0.0005, msix_lost_rate: 0.01}\n"
        "  driver: {eq_watchdog_us: 50}\n"
        "qp_pairs:\n"
        "  - {name: atom, sq_depth: 16, rq_depth: 16, ops: [fetch_add, cmp_swap, send, read]}\n"
        "  - {name: dgram, type: ud, sq_depth: 16, rq_depth: 16}\n"
        "  - {name: w, cq: own, cq_vector: 1, sq_depth: 16, rq_depth: 16, ops: [write_imm, write]}\n"
        "traffic: {sends_per_qp: 800, min_bytes: 0, max_bytes: 2000}\n")
    stale = 0
    for seed, report in passing_runs(path, tmp_path, range(1, 11)):
        counts = report["counts"]
        assert counts["stale_extended_delivered"] <= counts["cqe_writes_failed"], (seed, counts)
        stale += counts["stale_extended_delivered"]
    assert stale > 0


@pytest.mark.parametrize("device,faults", [
    # 64-byte slots whose extended halves (immediate data, UD source MAC, and their valid
    # bits) may be read stale after a refused write.
    ("generation: 3, cqe_64byte: true", "cqe_write_error_rate: 0.0003, msix_lost_rate: 0.01"),
    # Split writes back the link up, so the configuration write that stops the device
    # mastering the bus completes long after the error: resizes in flight must not free
    # their new rings before then, though the device took them.
    ("generation: 3", "ceqe_write_error_rate: 0.001, split_rate: 0.05"),
])
def test_refused_writes_under_resizes_atomics_and_ud_over_seeds_1_to_20(device, faults, tmp_path):
    path = tmp_path / "mixed.yaml"
    path.write_text(
        "name: mixed\nseed: 1\nconfig:\n"
        "  device: {num_ceqs: 2, max_cqe: 1024, %s}\n"
        "  driver: {eq_watchdog_us: 40}\n"
        "  link:\n    faults: {%s}\n"
        "qp_pairs:\n"
        "  - {name: a, cq: own, cq_vector: 0, sq_depth: 32, rq_depth: 32, ops: [send, write_imm, read, write]}\n"
        "  - {name: b, cq: own, cq_vector: 1, sq_depth: 16, rq_depth: 16, poll_ctx: workqueue}\n"
        "  - {name: c, sq_depth: 16, rq_depth: 16, ops: [fetch_add, cmp_swap, send]}\n"
        "  - {name: d, type: ud, sq_depth: 16, rq_depth: 16}\n"
        "  - {name: e, cq: own, cq_entries: 8, sq_depth: 16, rq_depth: 16}\n"
        "traffic: {sends_per_qp: 1500, max_bytes: 2048, resize_every: 250, resize_cqes: [96, 200, 64], batch: 3,"
        " imm_every: 2}\n"
        "faults:\n  - {pair: b, side: a, rate: 0.001, code: rem_access_err}\n" % (device, faults))
    refused = stale = 0
    for seed, report in passing_runs(path, tmp_path, range(1, 21)):
        counts = report["counts"]
        refused += counts["cqe_writes_failed"] + counts["ceqe_writes_failed"]
        stale += counts["stale_extended_delivered"]
        assert counts["stale_extended_delivered"] <= counts["cqe_writes_failed"], (seed, counts)
    assert refused >= 10
    if "cqe_64byte" in device:
        assert stale > 0  # the valid bits a stale extended half brings were met, and counted
