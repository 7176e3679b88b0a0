"""Payload writes the device poisons (config.link.faults.payload_write_poison_rate), as a
validation engineer uses them: the shipped scenario holds over seeds 1-20, every poisoned
write is reported and the device given up once, work reported done whose data never landed
is counted rather than failed, and runs that cannot carry them refuse them."""

import json

import pytest

import irdma_sim

from conftest import failed_checks, passing_runs
from irdma_sim.trace import lines as trace_lines


def test_every_poisoned_write_gives_the_device_up_once_over_seeds_1_to_20(scenario, tmp_path):
    delivered = 0
    for seed, report in passing_runs(scenario("poisoned_writes.yaml"), tmp_path, range(1, 21)):
        counts = report["counts"]
        assert counts["payload_writes_poisoned"] == 1, (seed, counts)  # the first ends the device's part
        assert counts["pci_errors"] == 1 and counts["device_resets_requested"] == 1, (seed, counts)
        assert counts["device_fatal_events"] == 1, seed
        assert "every_poisoned_write_reported" in {c["name"] for c in report["checks"]}
        assert counts["poisoned_payloads_delivered"] <= 2, (seed, counts)
        delivered += counts["poisoned_payloads_delivered"]
    # The window the fault opens: some seed reports poisoned work done before the driver
    # hears of the error.
    assert delivered > 0


def test_a_poisoned_write_is_traced_and_never_lands(scenario, tmp_path):
    report = irdma_sim.run(scenario("poisoned_writes.yaml"), tmp_path / "out", seed=1)
    assert report["passed"], failed_checks(report)
    events = [json.loads(line) for line in trace_lines(tmp_path / "out" / "trace.bin")]
    poisoned = [e for e in events if e["ev"] == "dma_write_poisoned"]
    assert len(poisoned) == 1, poisoned
    assert poisoned[0]["purpose"] == "payload_write" and "qp" in poisoned[0], poisoned[0]
    landed = [e for e in events if e["ev"] == "dma_write" and e["t_ps"] == poisoned[0]["t_ps"]
              and e["addr"] == poisoned[0]["addr"]]
    assert not landed, landed


def test_without_poison_the_scenario_tests_nothing_and_says_so(variant, tmp_path):
    path = variant("poisoned_writes.yaml", "payload_write_poison_rate: 0.0003", "payload_write_poison_rate: 0.0000001")
    report = irdma_sim.run(path, tmp_path / "out", seed=1, trace=False)
    assert report["passed"], failed_checks(report)
    assert report["counts"]["payload_writes_poisoned"] == 0
    assert "every_poisoned_write_reported" not in {c["name"] for c in report["checks"]}
    assert any("payload_write_poison_rate" in w and "struck nothing" in w for w in report["warnings"]), report["warnings"]


@pytest.mark.parametrize("new,message", [
    ("payload_write_poison_rate: 2", "config.link.faults.payload_write_poison_rate"),
    ("payload_write_poisn_rate: 0.0003", "unknown key"),
])
def test_bad_poison_settings_are_scenario_errors(new, message, refused_variant):
    stderr = refused_variant("poisoned_writes.yaml", "payload_write_poison_rate: 0.0003", new)
    assert message in stderr, stderr


@pytest.mark.parametrize("args,message", [
    (["--record"], "--record with link.faults"),
    (["--backend", "vfio-user"], "payload_write_poison_rate: a served model has no root port"),
])
def test_runs_that_cannot_carry_poisoned_writes_refuse_them(args, message, refused_run):
    stderr = refused_run("poisoned_writes.yaml", *args)
    assert message in stderr, stderr



def test_a_session_sees_its_poisoned_write_reported_and_the_data_missing(run_python):
    # A Session has no scoreboard: what it sees is a receive completed as done whose buffer
    # never got the bytes, and the counts that say why.
    proc = run_python(
        "from irdma_sim import Session\n"
        "s = Session(config_yaml='link: {faults: {payload_write_poison_rate: 1}}')\n"
        "cq = s.pool_get(64, comp_vector=-1, poll_ctx='softirq')\n"
        "a, b = s.create_qp_pair(cq, cq, sq_depth=8, rq_depth=8, max_msg_bytes=256)\n"
        "s.post_recv(b); s.post_send(a, b'hello')\n"
        "s.run_for_ns(50000)\n"
        "recv = [c for c in s.poll(cq) if c['opcode'] == 128]\n"
        "c = s.counters()\n"
        "print(recv[0]['status'], recv[0]['data'] != b'hello', c['payload_writes_poisoned'], c['pci_errors'],\n"
        "      c['device_resets_requested'])\n"
        "s.shutdown()\n")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.split() == ["0", "True", "1", "1", "1"], proc.stdout


def test_a_resize_the_device_loss_refuses_before_its_event_is_no_failure(tmp_path):
    # The driver stops its control QP before it raises IB_EVENT_DEVICE_FATAL, so a resize on
    # another thread may be refused (EBUSY) or cut short (ETIMEDOUT) by a poisoned write's
    # error before the workload hears the device was given up: judged at the end of the run.
    path = tmp_path / "poison_resize.yaml"
    path.write_text(
        "name: poison_resize\nseed: 1\nconfig:\n"
        "  device: {num_ceqs: 2, max_cqe: 1024, cqe_64byte: true, ceq_itr_us: 10}\n"
        "  driver: {eq_watchdog_us: 40}\n"
        "  link:\n    faults: {payload_write_poison_rate: 0.0002, msix_lost_rate: 0.01, msix_delayed_rate: 0.01}\n"
        "qp_pairs:\n"
        "  - {name: a, cq: own, cq_vector: 0, sq_depth: 32, rq_depth: 32, ops: [send, write_imm, read, write]}\n"
        "  - {name: b, cq: own, cq_vector: 1, sq_depth: 16, rq_depth: 16, poll_ctx: workqueue}\n"
        "  - {name: c, sq_depth: 16, rq_depth: 16}\n"
        "traffic: {sends_per_qp: 2000, max_bytes: 2048, resize_every: 300, resize_cqes: [96, 200, 64], batch: 3}\n")
    given_up = 0
    for seed, report in passing_runs(path, tmp_path, range(1, 11)):
        counts = report["counts"]
        assert counts["device_fatal_events"] == counts["payload_writes_poisoned"] <= 1, (seed, counts)
        assert counts["cq_resizes"] > 0, seed
        given_up += counts["device_fatal_events"]
    assert given_up >= 5
