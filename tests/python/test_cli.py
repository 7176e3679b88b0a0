"""The CLI and the scenario runner, as a user drives them."""

import bisect
import os
import json
import subprocess
import sys

import pytest

import irdma_sim
from conftest import SOURCE
from irdma_sim.report import summary
from irdma_sim.trace import lines as trace_lines


def cli(*args):
    return subprocess.run([sys.executable, "-m", "irdma_sim", *args], capture_output=True, text=True, timeout=600)


def test_smoke_runs_and_prints_a_summary(scenario, tmp_path):
    out = tmp_path / "smoke"
    proc = cli("run", scenario("smoke.yaml"), "--out", str(out), "--seed", "3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASSED" in proc.stdout
    assert "12000 completions delivered" in proc.stdout
    report = json.loads((out / "report.json").read_text())
    assert report["passed"] and report["seed"] == 3
    assert {c["name"] for c in report["checks"]} >= {
        "every_signaled_wr_completed_once",
        "every_message_received_once_in_order",
        "expected_status_and_opcode",
        "payload_integrity",
    }
    assert all(set(c) == {"name", "passed", "detail"} for c in report["checks"])


def test_outputs_follow_the_contract(scenario, tmp_path):
    report = irdma_sim.run(scenario("smoke.yaml"), tmp_path)
    for key in ("scenario", "seed", "sim_time_ps", "wall_time_s", "counts", "checks"):
        assert key in report
    for key in ("corrupt_cqes", "ud_dropped", "ceqes_dropped"):
        assert report["counts"][key] == 0
    times = []
    for line in trace_lines(tmp_path / "trace.bin"):
        ev = json.loads(line)
        times.append(ev["t_ps"])
        if ev["ev"] == "cqe":
            assert {"cq", "slot", "addr", "bytes"} <= set(ev)
            assert len(ev["bytes"]) in (64, 128)  # 32 or 64 bytes, hex
    assert times == sorted(times), "the trace is in simulated-time order"
    fields = {"cq", "wr_id", "status", "opcode", "vendor_err", "byte_len", "qp_num", "src_qp",
              "wc_flags", "imm_data", "invalidate_rkey", "slid", "sl", "pkey_index", "smac",
              "vlan_id", "network_hdr_type"}
    with open(tmp_path / "completions.jsonl") as f:
        lines = [json.loads(line) for line in f]
    assert len(lines) == report["counts"]["completions_delivered"]
    assert all(fields <= set(c) for c in lines)
    assert {c["opcode"] for c in lines} == {0, 128}


def test_same_seed_gives_identical_outputs_and_another_seed_does_not(scenario, tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for out, seed in ((a, 5), (b, 5), (c, 6)):
        assert irdma_sim.run(scenario("smoke.yaml"), out, seed=seed)["passed"]
    for name in ("trace.bin", "completions.jsonl", "coverage.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert (a / "completions.jsonl").read_bytes() != (c / "completions.jsonl").read_bytes()


@pytest.mark.parametrize("name", ["errors_flush.yaml", "errors_flush_gen3.yaml"])
def test_error_scenarios_report_their_faults_and_repeat_exactly(scenario, tmp_path, name):
    a, b = tmp_path / "a", tmp_path / "b"
    reports = [irdma_sim.run(scenario(name), out, seed=3) for out in (a, b)]
    for r in reports:
        assert r["passed"], [c for c in r["checks"] if not c["passed"]]
    assert (a / "completions.jsonl").read_bytes() == (b / "completions.jsonl").read_bytes()
    assert (a / "trace.bin").read_bytes() == (b / "trace.bin").read_bytes()
    r = reports[0]
    assert [(f["request"], f["code"]) for f in r["faults"]][:2] == [(41, "prot_err"), (100, "rem_access_err")]
    counts = r["counts"]
    assert counts["qps_in_error"] >= 4 and counts["flushed_completions"] > 0
    statuses = {s["name"] for s in counts["by_status"]}
    assert {"IB_WC_LOC_PROT_ERR", "IB_WC_REM_ACCESS_ERR", "IB_WC_WR_FLUSH_ERR"} <= statuses
    # The healthy pair and the QPs before their faults still complete successfully.
    assert any(s["name"] == "IB_WC_SUCCESS" and s["count"] > 300 for s in counts["by_status"])


@pytest.mark.parametrize("name,opcodes", [
    # SEND, RDMA_WRITE, RDMA_READ, LOCAL_INV, REG_MR, RECV, RECV_RDMA_WITH_IMM
    ("opcodes.yaml", {0, 1, 2, 6, 10, 128, 129}),
    # ... and COMP_SWAP, FETCH_ADD
    ("opcodes_gen3.yaml", {0, 1, 2, 3, 4, 6, 10, 128, 129}),
])
def test_opcode_scenarios_complete_every_opcode(scenario, tmp_path, name, opcodes):
    a, b = tmp_path / "a", tmp_path / "b"
    reports = [irdma_sim.run(scenario(name), out) for out in (a, b)]
    r = reports[0]
    assert r["passed"], [c for c in r["checks"] if not c["passed"]]
    assert (a / "completions.jsonl").read_bytes() == (b / "completions.jsonl").read_bytes()
    assert {o["opcode"] for o in r["counts"]["by_opcode"]} == opcodes
    # BIND_MW and signaled NOPs complete as IB_WC_GENERAL_ERR: the kernel maps no opcode.
    assert {s["name"] for s in r["counts"]["by_status"]} == {"IB_WC_SUCCESS", "IB_WC_GENERAL_ERR"}
    flags = set()
    for line in open(a / "completions.jsonl"):
        flags.add(json.loads(line)["wc_flags"])
    # WITH_IMM, WITH_INVALIDATE; UD: GRH | WITH_SMAC | WITH_NETWORK_HDR_TYPE (| WITH_VLAN)
    assert {2, 4} <= flags and any(f & 1 and f & 16 for f in flags), flags
    assert r["counts"]["extended_cqes"] > 0


def test_resize_scenario_drains_retired_rings_under_traffic(scenario, tmp_path):
    r = irdma_sim.run(scenario("resize.yaml"), tmp_path, trace=False)
    assert r["passed"], [c for c in r["checks"] if not c["passed"]]
    counts = r["counts"]
    assert counts["cq_resizes"] > 50
    assert counts["retired_ring_completions"] > 0  # resizes found completions unpolled


def test_overflow_scenario_reports_the_cq_error_and_recovers(scenario, tmp_path):
    r = irdma_sim.run(scenario("overflow.yaml"), tmp_path)
    assert r["passed"], [c for c in r["checks"] if not c["passed"]]
    counts = r["counts"]
    assert counts["cqes_overflowed"] > 0 and counts["cq_errors"] == counts["aeqes"] > 0
    assert counts["pairs_torn_down"] == 1
    trace = [json.loads(line) for line in trace_lines(tmp_path / "trace.bin")]
    dropped = [e for e in trace if e["ev"] == "cqe_overflow"]
    assert len(dropped) == counts["cqes_overflowed"] and all(e["dropped"] == 1 for e in dropped)
    assert sum(e["ev"] == "aeqe" and e["code"] == 0x203 for e in trace) == counts["aeqes"]


def test_teardown_with_work_in_flight_leaves_nothing_behind(scenario, tmp_path):
    r = irdma_sim.run(scenario("teardown.yaml"), tmp_path, trace=False)
    assert r["passed"], [c for c in r["checks"] if not c["passed"]]
    counts = r["counts"]
    assert counts["cqes_cleaned"] > 0 and counts["ceqes_left"] > 0  # there was something pending
    assert counts["qps_in_error"] == 6
    checks = {c["name"]: c["passed"] for c in r["checks"]}
    assert checks["no_dma_errors"] and checks["no_dma_memory_left_mapped"] and checks["teardown_clean"]


def test_malformed_scenario_is_named_with_its_line_and_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nqp_pairs:\n  - name: p\n    sq_dept: 8\n")
    proc = cli("run", str(bad), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert f"{bad}:4:" in proc.stderr and "qp_pairs[0].sq_dept" in proc.stderr
    assert proc.stderr.count(str(bad)) == 1, "the file is named once: " + proc.stderr
    assert not (tmp_path / "out" / "report.json").exists()
    with pytest.raises(irdma_sim.RunFailed, match="sq_dept"):
        irdma_sim.run(bad, tmp_path / "out2")


def test_check_validates_without_running(scenario, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nqp_pairs: []\ncolour: red\n")
    proc = cli("check", scenario("smoke.yaml"), str(bad))
    assert proc.returncode == 1
    assert "ok   " in proc.stdout and "colour" in proc.stderr


def test_summary_marks_failed_checks():
    report = {
        "scenario": "s", "file": "f", "seed": 1, "sim_time_ps": 1e9, "wall_time_s": 0.1, "passed": False,
        "counts": {"sends_posted": 1, "recvs_posted": 1, "bytes_moved": 1, "rnr_stalls": 0,
                   "cqes_written": 1, "extended_cqes": 0, "completions_delivered": 0, "pool_cqs": 1,
                   "by_status": [], "by_opcode": []},
        "checks": [{"name": "x", "passed": False, "detail": "lost one"}],
    }
    text = summary(report)
    assert "FAIL x: lost one" in text and "FAILED: 0 of 1" in text


def test_run_many_runs_scenarios_in_parallel_processes(scenario, tmp_path):
    jobs = [(scenario("smoke.yaml"), tmp_path / f"s{seed}", seed) for seed in (1, 2)]
    reports = irdma_sim.run_many(jobs, workers=2)
    assert [r["seed"] for r in reports] == [1, 2]
    assert all(r["passed"] for r in reports)


def test_no_trace_skips_only_the_trace(scenario, tmp_path):
    report = irdma_sim.run(scenario("smoke.yaml"), tmp_path, trace=False)
    assert report["passed"]
    assert not (tmp_path / "trace.bin").exists()
    assert (tmp_path / "completions.jsonl").stat().st_size > 0
    proc = cli("run", scenario("smoke.yaml"), "--out", str(tmp_path / "cli"), "--no-trace")
    assert proc.returncode == 0 and "report.json, completions.jsonl" in proc.stdout, proc.stdout


def test_every_shipped_scenario_is_valid(source_dir):
    files = sorted(str(p) for p in (source_dir / "scenarios").glob("*.yaml"))
    assert len(files) >= 2
    proc = cli("check", *files)
    assert proc.returncode == 0, proc.stderr


def test_rdma_operations_scenario_passes_with_every_opcode(scenario, tmp_path):
    report = irdma_sim.run(scenario("rdma_ops.yaml"), tmp_path, trace=False)
    assert report["passed"], [c for c in report["checks"] if not c["passed"]]
    opcodes = {o["opcode"] for o in report["counts"]["by_opcode"]}
    # SEND, RDMA_WRITE, RDMA_READ, LOCAL_INV, RECV, RECV_RDMA_WITH_IMM
    assert opcodes == {0, 1, 2, 6, 128, 129}
    flags = set()
    for line in open(tmp_path / "completions.jsonl"):
        flags.add(json.loads(line)["wc_flags"])
    assert {2, 4} <= flags  # WITH_IMM and WITH_INVALIDATE both seen


def test_sweep_runs_every_seed_and_says_which_could_not_run(scenario, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nqp_pairs:\n  - name: p\n    sq_dept: 8\n")
    proc = cli("sweep", scenario("smoke.yaml"), str(bad), "--seeds", "4-5", "--out", str(tmp_path / "sw"), "--jobs", "2")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:2] == [l for l in lines if l.startswith("PASS  smoke seed")] and len(lines[:2]) == 2
    assert sum(l.startswith("ERROR bad seed") and "sq_dept" in l for l in lines) == 2
    assert "2 of 4 runs passed, 0 failed, 2 could not run" in lines[-1]
    assert json.loads((tmp_path / "sw" / "smoke" / "seed5" / "report.json").read_text())["seed"] == 5
    assert not (tmp_path / "sw" / "smoke" / "seed5" / "trace.bin").exists(), "sweeps skip the trace"
    assert cli("sweep", scenario("smoke.yaml"), "--seeds", "3-1").returncode == 2


def test_sweep_junit_has_a_testcase_per_scenario_and_seed(scenario, tmp_path):
    import xml.etree.ElementTree as ET
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nqp_pairs:\n  - name: p\n    sq_dept: 8\n")
    junit = tmp_path / "reports" / "sweep.xml"
    proc = cli("sweep", scenario("smoke.yaml"), str(bad), "--seeds", "1-2", "--out", str(tmp_path / "sw"),
               "--junit", str(junit))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites" and (root.get("tests"), root.get("errors"), root.get("failures")) == ("4", "2", "0")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"smoke", "bad"}
    smoke_cases = suites["smoke"].findall("testcase")
    assert [c.get("name") for c in smoke_cases] == ["seed 1", "seed 2"]
    assert all(c.find("failure") is None and c.find("error") is None and float(c.get("time")) > 0 for c in smoke_cases)
    errors = [c.find("error") for c in suites["bad"].findall("testcase")]
    assert all(e is not None and "sq_dept" in e.get("message") for e in errors)
    assert not list(junit.parent.glob("*.tmp"))
    proc = cli("sweep", scenario("smoke.yaml"), "--seeds", "1", "--out", str(tmp_path / "sw2"), "--junit", "/proc/no/j.xml")
    assert proc.returncode == 2 and "--junit: cannot write /proc/no/j.xml" in proc.stderr and "Traceback" not in proc.stderr
    assert json.loads((tmp_path / "sw2" / "summary.json").read_text())["exit_status"] == 2


def test_junit_failure_lists_each_failed_check_with_its_detail(tmp_path):
    from irdma_sim.junit import junit_tree
    from irdma_sim.sweep import Outcome
    report = {"passed": False, "wall_time_s": 0.5, "interrupted": None, "checks": [
        {"name": "every_signaled_wr_completed_once", "passed": False, "detail": "wr 7 of qp 3 completed twice"},
        {"name": "expected_status_and_opcode", "passed": True, "detail": "12 checked"},
        {"name": "no_cqe_lost", "passed": False, "detail": "cq 2 slot 9: <never written> & more"}]}
    interrupted = {"passed": True, "wall_time_s": 0.1, "interrupted": {"signal": "SIGINT"}, "checks": []}
    tree = junit_tree([Outcome("s.yaml", "s", 3, tmp_path / "a", report=report),
                       Outcome("s.yaml", "s", 4, tmp_path / "b", report=interrupted)])
    path = tmp_path / "j.xml"
    tree.write(path, encoding="utf-8", xml_declaration=True)
    import xml.etree.ElementTree as ET
    suite = ET.parse(path).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("2", "1", "1")
    failed, skipped = suite.findall("testcase")
    failure = failed.find("failure")
    assert failure.get("message") == "failed: every_signaled_wr_completed_once, no_cqe_lost"
    assert failure.text.splitlines() == ["every_signaled_wr_completed_once: wr 7 of qp 3 completed twice",
                                         "no_cqe_lost: cq 2 slot 9: <never written> & more"]
    assert "SIGINT" in skipped.find("skipped").get("message")


def test_seed_lists():
    from irdma_sim.sweep import parse_seeds
    assert parse_seeds("1-3,7,0x10") == [1, 2, 3, 7, 16]
    for bad in ("3-1", "x", "-2", ""):
        with pytest.raises(ValueError):
            parse_seeds(bad)


def test_diff_names_where_two_runs_part(scenario, tmp_path):
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        assert irdma_sim.run(scenario("smoke.yaml"), tmp_path / name, seed=seed)["passed"]
    same = cli("diff", str(tmp_path / "a"), str(tmp_path / "b"))
    assert same.returncode == 0 and "identical" in same.stdout
    other = cli("diff", str(tmp_path / "a"), str(tmp_path / "c"))
    assert other.returncode == 1
    assert "seed: 1 -> 2" in other.stdout
    assert "completions.jsonl: first difference at line 1" in other.stdout
    assert "fields: byte_len" in other.stdout and "trace.bin: first difference" in other.stdout
    assert cli("diff", str(tmp_path / "a"), str(tmp_path / "nothing")).returncode == 2


def test_a_cqe_half_lands_in_one_write_and_the_extended_half_first(scenario, tmp_path):
    """H 17: a reader that sees a main half valid must find the rest of the CQE there. Each
    32-byte half lands in one DMA write (its valid qword never before its other qwords),
    and an extended CQE's second half lands before its first, across the ring wrap too."""
    irdma_sim.run(scenario("smoke.yaml"), tmp_path)
    events = [json.loads(line) for line in trace_lines(tmp_path / "trace.bin")]
    writes = {}  # address -> [(arrival, length)], in time order
    for ev in events:
        if ev["ev"] == "dma_write":
            writes.setdefault(int(ev["addr"], 16), []).append((ev["t_ps"], ev["len"]))

    def landing(addr, logged):
        """The write to `addr` that carried the CQE the engine logged at `logged`: the first
        to arrive after the engine issued it (a slot is rewritten only a ring pass later)."""
        times = writes.get(addr, [])
        i = bisect.bisect_left(times, (logged - 1_000_000, 0))
        return times[i] if i < len(times) and times[i][0] <= logged + 1_000_000 else None

    extended = wrapped = 0
    for ev in events:
        if ev["ev"] != "cqe":
            continue
        main = int(ev["addr"], 16)
        t_main, length = landing(main, ev["t_ps"])
        assert length == 32, ev
        if len(ev["bytes"]) == 128:  # 32-byte mode: the extended half in the next slot
            ext = landing(main + 32, ev["t_ps"])
            if ext is None:  # the main half sits in the ring's last slot
                ext = landing(main - 32 * ev["slot"], ev["t_ps"])
                wrapped += 1
            assert ext[1] == 32 and ext[0] < t_main, ev
            extended += 1
    assert extended >= 1500 and wrapped >= 1, (extended, wrapped)


@pytest.mark.parametrize("name", sorted(p.stem for p in (SOURCE / "scenarios").glob("*.yaml")))
def test_every_shipped_scenario_is_deterministic(name, scenario, tmp_path):
    from irdma_sim.diff import diff_runs
    for out in ("a", "b"):
        irdma_sim.run(scenario(f"{name}.yaml"), tmp_path / out)
    assert diff_runs(tmp_path / "a", tmp_path / "b") == []


def test_sweep_keeps_scenarios_of_one_name_apart_and_writes_a_summary(scenario, tmp_path):
    """Two files with one stem get their own output directories (they used to share one,
    and both lines reported the second); runs.jsonl and summary.json say what ran."""
    for sub, pairs in (("one", 1), ("two", 2)):
        doc = {"name": f"same_{sub}", "qp_pairs": [{"name": f"p{i}", "sq_depth": 8, "rq_depth": 8} for i in range(pairs)],
               "traffic": {"sends_per_qp": 50, "max_bytes": 64}}
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "same.yaml").write_text(json.dumps(doc))
    out = tmp_path / "sw"
    files = [str(tmp_path / "one" / "same.yaml"), str(tmp_path / "two" / "same.yaml"), scenario("smoke.yaml")]
    # The first file named again, spelled another way: it runs once.
    again = str(tmp_path / "one" / ".." / "one" / "same.yaml")
    proc = cli("sweep", *files, again, "--seeds", "1", "--out", str(out), "--jobs", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [l.split(":")[0] for l in proc.stdout.splitlines()[:3]] == [
        "PASS  one--same seed 1", "PASS  two--same seed 1", "PASS  smoke seed 1"]
    for sub, completions in (("one", 200), ("two", 400)):
        report = json.loads((out / f"{sub}--same" / "seed1" / "report.json").read_text())
        assert report["scenario"] == f"same_{sub}" and report["counts"]["completions_delivered"] == completions
    runs = [json.loads(line) for line in open(out / "runs.jsonl")]
    assert [(r["scenario"], r["seed"], r["status"]) for r in runs] == [
        ("one--same", 1, "PASS"), ("two--same", 1, "PASS"), ("smoke", 1, "PASS")]
    assert runs[1]["completions"] == 400 and runs[1]["out"] == str(out / "two--same" / "seed1")
    summary = json.loads((out / "summary.json").read_text())
    assert summary == {"runs": 3, "passed": 3, "failed": 0, "errors": 0, "interrupted": 0, "exit_status": 0,
                       "failing": []}


@pytest.mark.parametrize("args,names", [
    (["run", "{smoke}", "--seed", "-1"], "--seed"),
    (["run", "{smoke}", "--seed", "x"], "--seed"),
    (["run", "{smoke}", "--seed", str(2**64)], "--seed"),
    (["sweep", "{smoke}", "--seeds", "1", "--jobs", "-3"], "--jobs"),
    (["sweep", "{smoke}", "--seeds", "1", "--jobs", "0"], "--jobs"),
    (["sweep", "{smoke}", "--seeds", "2-x"], "--seeds"),
    (["run"], "scenario"),
    (["frobnicate"], "frobnicate"),
    (["run", "{smoke}", "--colour"], "--colour"),
])
def test_a_bad_argument_is_one_line_naming_it_and_exit_2(scenario, tmp_path, args, names):
    proc = cli(*[a.format(smoke=scenario("smoke.yaml")) for a in args])
    assert proc.returncode == 2
    assert proc.stdout == "" and len(proc.stderr.splitlines()) == 1 and names in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "incompatible function arguments" not in proc.stderr


def test_the_cpp_runner_refuses_a_negative_seed(scenario, tmp_path):
    runner = os.path.join(os.environ["IRDMA_SIM_BIN"], "..", "model", "system", "irdma-sim-run")
    proc = subprocess.run([runner, scenario("smoke.yaml"), "--out", str(tmp_path), "--seed", "-1"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "--seed" in proc.stderr and "SystemC" not in proc.stderr, proc.stderr
    assert not (tmp_path / "report.json").exists()


def test_check_and_run_say_what_is_wrong_with_a_path(tmp_path):
    for target, words in ((tmp_path, "is a directory"), (tmp_path / "none.yaml", "No such file")):
        proc = cli("check", str(target))
        assert proc.returncode == 1 and words in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        proc = cli("run", str(target), "--out", str(tmp_path / "out"))
        assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_version():
    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"irdma-sim {irdma_sim.__version__}"


def test_a_rerun_without_trace_leaves_no_old_trace_behind(scenario, tmp_path):
    assert irdma_sim.run(scenario("smoke.yaml"), tmp_path, seed=1)["passed"]
    assert (tmp_path / "trace.bin").exists()
    assert irdma_sim.run(scenario("smoke.yaml"), tmp_path, seed=2, trace=False)["passed"]
    assert not (tmp_path / "trace.bin").exists()


def test_diff_names_a_file_cut_short(scenario, tmp_path):
    for name in ("a", "b"):
        irdma_sim.run(scenario("smoke.yaml"), tmp_path / name, seed=1)
    completions = (tmp_path / "b" / "completions.jsonl").read_bytes()
    (tmp_path / "b" / "completions.jsonl").write_bytes(completions[:len(completions) // 2])
    proc = cli("diff", str(tmp_path / "a"), str(tmp_path / "b"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert str(tmp_path / "b" / "completions.jsonl") in proc.stderr and "cut short" in proc.stderr, proc.stderr
    (tmp_path / "b" / "report.json").write_text('{"scenario": ')
    proc = cli("diff", str(tmp_path / "a"), str(tmp_path / "b"))
    assert proc.returncode == 2 and str(tmp_path / "b" / "report.json") in proc.stderr, proc.stderr


@pytest.mark.parametrize("doc,words", [
    # The pool grows as it must: only the run finds that 8 CQ ids are not enough.
    ({"config": {"device": {"max_cq": 8, "max_cqe": 300}}, "qp_pairs": [{"name": f"p{i}"} for i in range(8)]},
     "config.device.max_cq = 8 is used up: p5: allocating its CQs failed with ENOSPC"),
    # The buffers fit; the driver's rings for 4096-deep queues do not.
    ({"config": {"host": {"memory_mb": 4}}, "qp_pairs": [{"name": "p", "sq_depth": 4096, "rq_depth": 4096}],
      "traffic": {"max_bytes": 1}},
     "config.host.memory_mb = 4 is used up: p: creating its QPs failed with ENOMEM"),
])
def test_a_limit_found_in_setup_is_a_scenario_error(tmp_path, doc, words):
    path = tmp_path / "limit.yaml"
    doc = dict(doc, name="limit")
    doc.setdefault("traffic", {})["sends_per_qp"] = 10
    path.write_text(json.dumps(doc))
    assert cli("check", str(path)).returncode == 0, "check cannot know"
    proc = cli("run", str(path), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr == f"irdma-sim: {path}: {words}" + proc.stderr.split(words)[1]
    assert len(proc.stderr.splitlines()) == 1 and "FAIL setup" not in proc.stdout


def test_summary_says_an_overflow_was_recovered_and_where_completions_went(scenario, tmp_path):
    proc = cli("run", scenario("overflow.yaml"), "--out", str(tmp_path), "--no-trace")
    assert proc.returncode == 0, proc.stdout
    assert "completions delivered on 4 CQ(s) (2 in the pool)" in proc.stdout
    assert ("overflow   2 CQ(s) overflowed (74 completions dropped), 2 IB_EVENT_CQ_ERR, 1 pair(s) torn down: "
            "overflowed and recovered") in proc.stdout
    proc = cli("run", scenario("resize.yaml"), "--out", str(tmp_path / "own"), "--no-trace")
    assert "completions delivered on 6 CQ(s) (0 in the pool)" in proc.stdout and "overflow " not in proc.stdout


def test_an_output_path_in_the_way_and_a_reader_gone_are_said_plainly(scenario, tmp_path):
    (tmp_path / "afile").write_text("x")
    proc = cli("run", scenario("smoke.yaml"), "--out", str(tmp_path / "afile"))
    assert proc.returncode == 2 and "cannot make the output directory" in proc.stderr, proc.stderr
    for name in ("a", "b"):
        irdma_sim.run(scenario("smoke.yaml"), tmp_path / name, seed=len(name) + (name == "b"))
    # The reader is gone before the diff writes a line: no traceback, no complaint.
    proc = subprocess.Popen([sys.executable, "-m", "irdma_sim", "diff", str(tmp_path / "a"), str(tmp_path / "b")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    assert proc.wait(timeout=60) in (0, 1) and proc.stderr.read() == ""


@pytest.mark.parametrize("command", ["run", "replay", "check", "sweep", "serve", "gather", "report", "diff"])
def test_each_subcommands_help_shows_examples_that_parse_and_its_exit_statuses(command):
    import shlex
    from irdma_sim.cli import build_parser
    help_text = subprocess.run([sys.executable, "-m", "irdma_sim", command, "--help"], capture_output=True, text=True,
                               timeout=60, check=True).stdout
    assert "examples:\n" in help_text and "exit status: 0 " in help_text, help_text
    examples = help_text.split("examples:\n")[1].split("\n\nexit status:")[0].splitlines()
    parser = build_parser()
    ran = 0
    for line in examples:
        for part in line.split("#")[0].split("&&"):
            argv = shlex.split(part)
            if argv[:1] != ["irdma-sim"]:
                continue  # sbatch: not ours
            parser.parse_args(argv[1:])  # every flag and value an example shows exists (exit 2 otherwise)
            ran += 1
    assert ran and any(shlex.split(line)[1:2] == [command] for line in examples), examples
