"""Step-by-step driving from Python: each test's Session lives in its own interpreter."""

import textwrap


def run_ok(run_python, code):
    proc = run_python(textwrap.dedent(code))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_pool_qp_pair_post_and_poll(run_python):
    out = run_ok(run_python, """
        from irdma_sim import Session
        s = Session()
        cq = s.pool_get(64, comp_vector=-1)
        a, b = s.create_qp_pair(cq, cq, sq_depth=8, rq_depth=8, max_msg_bytes=128)
        r = s.post_recv(b)
        w = s.post_send(a, b"payload!", imm=7)
        got = []
        while len(got) < 2:
            s.run_for_ns(500)
            got += s.poll(cq)
        assert [c["wr_id"] for c in got] == [r, w], got
        assert got[0]["data"] == b"payload!" and got[0]["imm_data"] == 7 and got[0]["opcode"] == 128
        assert got[1]["opcode"] == 0 and got[1]["byte_len"] == 8 and got[1]["status"] == 0
        c = s.counters()
        assert c["cqes_written"] == 2 and c["extended_cqes"] == 1 and c["completions_delivered"] == 2
        # report.json's names for what the device and driver count (the workload's own aside).
        names = {"cqes_overflowed", "cqs_overflowed", "cq_errors", "cqes_cleaned", "cqes_left", "ceqes_left",
                 "ceqes_consumed", "comp_events", "aeqes", "cq_arms", "arms_taken", "stale_arms", "ceqes",
                 "cqacks", "interrupts_raised", "device_wqes_executed", "flush_cqes", "qps_in_error",
                 "missed_interrupts_recovered", "function_resets_found", "device_resets_on_cqp_timeout"}
        assert names <= set(c), names - set(c)
        assert c["cqes_overflowed"] == 0 and c["cq_errors"] == 0 and c["device_wqes_executed"] == 1
        r = s.post_recv(b)
        s.post_send(a, b"x", invalidate=0xABCD)
        got = []
        while len(got) < 2:
            s.run_for_ns(500)
            got += s.poll(cq)
        assert got[0]["wc_flags"] == 4 and got[0]["invalidate_rkey"] == 0xABCD, got
        s.shutdown()
        print("ok", s.now_ps > 0)
    """)
    assert "ok True" in out


def test_errors_carry_linux_errno(run_python):
    run_ok(run_python, """
        import errno
        from irdma_sim import Session, VerbsError
        s = Session(config_yaml="device: {max_cqe: 100}")
        try:
            s.pool_get(101)
        except VerbsError as e:
            assert e.errno == errno.EINVAL, e
        else:
            raise AssertionError("a request larger than any CQ must fail")
        try:
            s.pool_get(10, poll_ctx="direct")
        except VerbsError as e:
            assert e.errno == errno.EINVAL
        cq = s.pool_get(10)
        try:
            s.pool_put(cq, 11)
        except VerbsError as e:
            assert e.errno == errno.EINVAL
        try:
            s.post_send(12345, b"x")
        except VerbsError:
            pass
        else:
            raise AssertionError("no such QP")
    """)


def test_bad_config_is_a_scenario_error(run_python):
    run_ok(run_python, """
        from irdma_sim import Session, ScenarioError
        try:
            Session(config_yaml="device: {clock_mhz: fast}")
        except ScenarioError as e:
            assert "config.device.clock_mhz" in str(e), e
        else:
            raise AssertionError("expected ScenarioError")
    """)


def test_one_session_per_process(run_python):
    run_ok(run_python, """
        from irdma_sim import Session
        s = Session()
        try:
            Session()
        except Exception as e:
            assert "already" in str(e), e
        else:
            raise AssertionError("a second elaboration must be refused")
    """)


def test_rdma_write_read_and_write_with_immediate(run_python):
    run_ok(run_python, """
        from irdma_sim import Session
        s = Session()
        cq = s.pool_get(64)
        a, b = s.create_qp_pair(cq, cq, sq_depth=8, rq_depth=8, max_msg_bytes=256)

        def drain(n):
            got = []
            for _ in range(200):
                got += s.poll(cq)
                if len(got) >= n:
                    return got
                s.run_for_ns(500)
            raise AssertionError(f"only {len(got)} of {n} completions: {got}")

        # WRITE lands in b's window, consumes no receive, completes on the SQ only.
        w = s.post_write(a, b"written by a", window_slot=3)
        [c] = drain(1)
        assert (c["wr_id"], c["opcode"], c["byte_len"], c["status"]) == (w, 1, 12, 0), c
        assert s.window(b, 3, 12) == b"written by a"

        # READ brings b's window back to a.
        s.set_window(b, 5, b"read me, a")
        r = s.post_read(a, 10, window_slot=5)
        [c] = drain(1)
        assert (c["wr_id"], c["opcode"], c["byte_len"], c["data"]) == (r, 2, 10, b"read me, a"), c

        # WRITE with immediate: data in the window, a RECV_RDMA_WITH_IMM on b's receive.
        rr = s.post_recv(b)
        w = s.post_write(a, b"with imm", window_slot=1, imm=0x55)
        got = drain(2)
        recv = next(c for c in got if c["wr_id"] == rr)
        assert recv["opcode"] == 129 and recv["imm_data"] == 0x55 and recv["byte_len"] == 8, recv
        assert s.window(b, 1, 8) == b"with imm"
        sq = next(c for c in got if c["wr_id"] == w)
        assert sq["opcode"] == 1

        # An unsignaled WRITE is retired by the next signaled one.
        s.post_write(a, b"quiet", window_slot=0, signaled=False)
        last = s.post_write(a, b"loud", window_slot=2)
        [c] = drain(1)
        assert c["wr_id"] == last and s.window(b, 0, 5) == b"quiet"

        try:
            s.post_read(a, 300, window_slot=0)
        except Exception as e:
            assert "does not hold" in str(e), e
        else:
            raise AssertionError("a READ larger than the window slot must be refused")
        assert s.counters()["wqe_errors"] == 0
    """)


def test_atomics_on_gen3_and_their_absence_on_gen2(run_python):
    run_ok(run_python, """
        import struct
        from irdma_sim import Session, VerbsError
        s = Session(config_yaml="device: {generation: 3}")
        cq = s.pool_get(64)
        a, b = s.create_qp_pair(cq, cq, sq_depth=8, rq_depth=8, max_msg_bytes=64)
        s.set_window(b, 2, struct.pack("<Q", 40))

        def one():
            for _ in range(200):
                got = s.poll(cq)
                if got:
                    return got[0]
                s.run_for_ns(500)
            raise AssertionError("no completion")

        s.post_fetch_add(a, 2, window_slot=2)
        c = one()
        assert c["opcode"] == 4 and c["status"] == 0 and c["byte_len"] == 0, c  # IB_WC_FETCH_ADD
        assert struct.unpack("<Q", c["data"])[0] == 40
        assert struct.unpack("<Q", s.window(b, 2, 8))[0] == 42
        s.post_compare_swap(a, 41, 7, window_slot=2)  # no match: unchanged
        c = one()
        assert c["opcode"] == 3 and struct.unpack("<Q", c["data"])[0] == 42, c  # IB_WC_COMP_SWAP
        s.post_compare_swap(a, 42, 7, window_slot=2)
        assert struct.unpack("<Q", one()["data"])[0] == 42
        assert struct.unpack("<Q", s.window(b, 2, 8))[0] == 7
    """)
    run_ok(run_python, """
        import errno
        from irdma_sim import Session, VerbsError
        s = Session()
        cq = s.pool_get(64)
        a, b = s.create_qp_pair(cq, cq)
        try:
            s.post_fetch_add(a, 1)
        except VerbsError as e:
            assert e.errno == errno.EOPNOTSUPP, e
        else:
            raise AssertionError("GEN_2 has no atomics")
    """)


FLUSH_CASE = """
    from irdma_sim import Session
    s = Session(config_yaml="device: {{generation: {gen}}}")
    cq = s.pool_get(64)
    a, b = s.create_qp_pair(cq, cq, sq_depth=8, rq_depth=8, max_msg_bytes=64)
    for _ in range(4):
        s.post_recv(b)
    a_recvs = [s.post_recv(a) for _ in range(3)]
    s.inject_fault(a, 2, 3)  # a's third request fails with FLUSH_REM_ACCESS_ERR
    sends = [s.post_send(a, b"x" * 10) for _ in range(4)]
    got = []
    for _ in range(200):
        got += s.poll(cq)
        s.run_for_ns(500)
    by_wr = {{c["wr_id"]: c for c in got}}
    # Two sends made it, with their receives; then a is in error and everything it still
    # holds comes back flushed: the first with the real error, the rest WR_FLUSH_ERR.
    assert [by_wr[w]["status"] for w in sends] == [0, 0, 10, 5], [by_wr.get(w) for w in sends]
    assert [by_wr[w]["status"] for w in a_recvs] == [10, 5, 5]
    assert all(by_wr[w]["vendor_err"] >> 16 == 1 for w in sends[2:] + a_recvs)
    assert sum(c["opcode"] == 128 and c["status"] == 0 for c in got) == 2  # b's receives
    assert len(got) == 2 + 2 + 2 + 3
    c = s.counters()
    assert c["qps_in_error"] == 1 and c["flush_cqes"] == {flush_cqes}, c
    # A SEND to the QP in error gets no answer: b retries until it gives up and moves to
    # error too; its SEND reports retries exceeded, its receives flush after it.
    w = s.post_send(b, b"late")
    s.run_for_ns(5000)
    late = s.poll(cq)
    assert [c["wr_id"] for c in late][0] == w, late
    assert late[0]["status"] == 12 and late[0]["vendor_err"] == 0x10008, late
    assert [c["status"] for c in late[1:]] == [12, 5], late
    assert s.counters()["qps_in_error"] == 2
    # Work posted once the driver knows a QP is flushed never reaches the device: the
    # driver completes it itself (spec G.7), after IRDMA_FLUSH_DELAY_MS.
    w = s.post_send(a, b"after")
    r = s.post_recv(a)
    assert s.poll(cq) == []
    s.run_for_ns(19_000_000)
    assert s.poll(cq) == []
    s.run_for_ns(2_000_000)
    gen = s.poll(cq)
    assert [(c["wr_id"], c["status"], c["vendor_err"], c["byte_len"]) for c in gen] == [
        (w, 5, 0x10001, 0), (r, 5, 0x10001, 0)], gen
    assert gen[0]["opcode"] == 0 and gen[1]["opcode"] == 128, gen
"""


def test_injected_fault_flushes_both_queues_gen2(run_python):
    # GEN_2: one flush CQE per queue, expanded by the driver.
    run_ok(run_python, FLUSH_CASE.format(gen=2, flush_cqes=2))


def test_injected_fault_flushes_both_queues_gen3(run_python):
    # GEN_3: one flush CQE per WQE (2 sends + 3 receives).
    run_ok(run_python, FLUSH_CASE.format(gen=3, flush_cqes=5))


def test_software_flush_waits_for_the_qps_unpolled_cqes(run_python):
    # Spec G.7 / H 35: the flush work, due 20 ms after the driver learned of the flush, finds
    # the QP's hardware flush CQEs still unpolled in its CQ and waits; they come first, the
    # first receive with the fault's code, and only the receive the device never saw
    # completes in software. The other CQ sees nothing of it.
    run_ok(run_python, """
        from irdma_sim import Session
        s = Session(config_yaml="{device: {generation: 3, num_ceqs: 2}, host: {cpus: 2}}")
        cq1 = s.pool_get(64, comp_vector=0)
        cq2 = s.pool_get(64, comp_vector=1)
        assert cq1 != cq2
        a, b = s.create_qp_pair(cq1, cq1, sq_depth=8, rq_depth=8, max_msg_bytes=64)
        s.create_qp_pair(cq2, cq2, sq_depth=8, rq_depth=8, max_msg_bytes=64)
        recvs = [s.post_recv(a) for _ in range(4)]
        s.inject_fault(a, 0, 5)  # FLUSH_REM_OP_ERR
        sends = [s.post_send(a, b"x") for _ in range(2)]
        s.run_for_ns(20000)
        first = s.poll(cq1, max_entries=1)  # the driver learns a is flushed
        assert [(c["wr_id"], c["status"]) for c in first] == [(sends[0], 11)], first
        late = s.post_recv(a)
        s.run_for_ns(25_000_000)
        assert s.poll(cq2) == []
        rest = s.poll(cq1)
        assert [c["wr_id"] for c in rest] == [sends[1]] + recvs, rest
        assert [c["status"] for c in rest] == [5, 11, 5, 5, 5], rest
        assert s.poll(cq1) == []
        s.run_for_ns(25_000_000)
        gen = s.poll(cq1)
        assert [(c["wr_id"], c["status"], c["vendor_err"]) for c in gen] == [(late, 5, 0x10001)], gen
    """)


def test_own_cq_events_resize_and_overflow(run_python):
    run_ok(run_python, """
        from irdma_sim import Session, VerbsError
        s = Session()
        cq = s.alloc_cq(2)  # a ring of (2 + 1) x 2 = 6 slots: five CQEs fit
        a, b = s.create_qp_pair(cq, cq, sq_depth=8, rq_depth=8, max_msg_bytes=64)

        def send(n):
            for _ in range(n):
                s.post_recv(b)
                s.post_send(a, b"x")
            s.run_for_ns(20000)

        assert s.req_notify_cq(cq) == 0
        send(1)
        assert s.cq_events(cq) == {"completion_events": 1, "cq_errors": 0}
        assert len(s.poll(cq)) == 2
        send(1)  # not armed: no event, but a re-arm reports the miss
        assert s.cq_events(cq)["completion_events"] == 1
        assert s.req_notify_cq(cq, report_missed=True) == 1
        s.run_for_ns(5000)
        assert s.cq_events(cq)["completion_events"] == 2  # the device fired for what was unpolled
        s.resize_cq(cq, 64)  # the two unpolled CQEs stay in the retired ring
        send(3)
        got = s.poll(cq, 32)
        assert [c["wr_id"] for c in got] == sorted(c["wr_id"] for c in got) and len(got) == 8, got
        # Too small, and nobody polls: the device drops what does not fit and says so.
        cq2 = s.alloc_cq(2)
        c, d = s.create_qp_pair(cq2, cq2, sq_depth=8, rq_depth=8, max_msg_bytes=64)
        for _ in range(4):
            s.post_recv(d)
            s.post_send(c, b"y")
        s.run_for_ns(40000)
        assert s.cq_events(cq2)["cq_errors"] == 1
        assert len(s.poll(cq2, 16)) == 5
        pool = s.pool_get(16)
        try:
            s.resize_cq(pool, 100)
            raise AssertionError("a pool CQ was resized")
        except VerbsError as e:
            assert e.errno == 95  # EOPNOTSUPP
        s.shutdown()
    """)


def test_random_use_and_misuse_of_the_api_never_crashes(run_python):
    """2000 random calls, many of them wrong (unknown ids, sizes out of range, buffers
    larger than host memory, puts of CQs not taken, QPs destroyed twice): every call
    returns or raises VerbsError (TypeError for a negative size), the simulation goes on,
    and shutdown still tears everything down. It once ran the host out of memory."""
    out = run_ok(run_python, """
        import random
        from irdma_sim import Session, VerbsError
        rng = random.Random(3)
        s = Session(config_yaml="device: {max_cqe: 512, generation: 3}")
        cqs, qps, own = [], [], []
        def any_id(ids):
            return rng.choice(ids) if ids and rng.random() < 0.7 else rng.choice([0, 7, 999, 2**31, 2**32 - 1])
        def size():
            return rng.choice([0, 1, 2, 8, 64, 511, 512, 513, 4096, 2**20, 2**31 - 1, -1])
        ops = {
            "pool_get": lambda: cqs.append(s.pool_get(size(), rng.choice([-1, 0, 1, 5, 2**16]))),
            "pool_put": lambda: s.pool_put(any_id(cqs), size()),
            "alloc_cq": lambda: own.append(s.alloc_cq(size(), rng.choice([0, 1, 9]))),
            "resize_cq": lambda: s.resize_cq(any_id(own + cqs), size()),
            "notify": lambda: s.req_notify_cq(any_id(own + cqs), rng.random() < 0.5, rng.random() < 0.5),
            "pair": lambda: qps.extend(s.create_qp_pair(any_id(cqs + own), any_id(cqs + own),
                                                        rng.choice([1, 8, 64, 0, 5000]), rng.choice([1, 8, 0]),
                                                        rng.choice([64, 256, 0, 2**20]))),
            "destroy": lambda: s.destroy_qp(any_id(qps)),
            "send": lambda: s.post_send(any_id(qps), bytes(rng.choice([0, 1, 64, 300, 5000])),
                                        imm=rng.choice([None, 5]), signaled=rng.random() < 0.8),
            "recv": lambda: s.post_recv(any_id(qps)),
            "write": lambda: s.post_write(any_id(qps), b"w" * rng.choice([1, 64, 4096]), window_slot=size() % 100),
            "read": lambda: s.post_read(any_id(qps), rng.choice([1, 16, 2**20]), window_slot=rng.choice([0, 3, 10**6])),
            "atomic": lambda: s.post_fetch_add(any_id(qps), 3, window_slot=rng.choice([0, 2, 10**6])),
            "window": lambda: s.window(any_id(qps), rng.choice([0, 5, 10**6]), rng.choice([0, 8, 2**20])),
            "fault": lambda: s.inject_fault(any_id(qps), rng.choice([0, 3, 2**40]), rng.choice([1, 2, 99, 0])),
            "poll": lambda: s.poll(any_id(cqs + own), rng.choice([1, 16, 0, -1])),
            "run": lambda: s.run_for_ns(rng.choice([0, 100, 5000, 50000])),
        }
        names = list(ops)
        outcomes = {"ok": 0, "refused": 0}
        for step in range(2000):
            try:
                ops[rng.choice(names)]()
                outcomes["ok"] += 1
            except (VerbsError, TypeError) as e:  # TypeError: pybind11 refusing a negative size
                outcomes["refused"] += 1
        s.run_for_ns(100000)
        for cq in cqs + own:
            try:
                s.poll(cq, 64)
            except VerbsError:
                pass
        s.shutdown()
        print("outcomes", outcomes["ok"], outcomes["refused"])
    """)
    ok, refused = map(int, out.split("outcomes")[1].split())
    assert ok > 500 and refused > 300, out


def test_buffers_past_host_memory_are_enomem_not_a_dead_host(run_python):
    run_ok(run_python, """
        import errno
        from irdma_sim import Session, VerbsError
        s = Session(config_yaml="host: {memory_mb: 4}")
        cq = s.pool_get(64)
        try:
            s.create_qp_pair(cq, cq, sq_depth=64, rq_depth=64, max_msg_bytes=65536)
        except VerbsError as e:
            assert e.errno == errno.ENOMEM, e
        else:
            raise AssertionError("40 MiB of buffers in 4 MiB of host memory")
        a, b = s.create_qp_pair(cq, cq, sq_depth=8, rq_depth=8, max_msg_bytes=256)  # nothing leaked
        s.post_recv(b); s.post_send(a, b"still fine")
        s.run_for_ns(20000)
        assert [c["status"] for c in s.poll(cq)] == [0, 0]
        s.shutdown()
    """)


def test_software_completions_raise_an_event_only_on_an_armed_cq(run_python):
    # H 27: work posted after the flush completes in software; the CQ's handler hears of
    # it only if the CQ is armed, as a hardware CQE would have it.
    run_ok(run_python, """
        from irdma_sim import Session
        s = Session()
        cq = s.alloc_cq(64)  # IB_POLL_DIRECT: armed only when asked
        a, b = s.create_qp_pair(cq, cq, sq_depth=8, rq_depth=8, max_msg_bytes=64)
        s.post_recv(b)
        s.inject_fault(a, 0, 2)
        s.post_send(a, b"x")
        s.run_for_ns(20000)
        assert [c["status"] for c in s.poll(cq)] == [4], "the faulted send, LOC_PROT"
        events = s.cq_events(cq)["completion_events"]
        w = s.post_send(a, b"unarmed")
        s.run_for_ns(21_000_000)
        assert s.cq_events(cq)["completion_events"] == events, "no event for an unarmed CQ"
        assert [(c["wr_id"], c["status"]) for c in s.poll(cq)] == [(w, 5)]
        assert s.req_notify_cq(cq, report_missed=True) == 0
        w = s.post_send(a, b"armed")
        s.run_for_ns(21_000_000)
        assert s.cq_events(cq)["completion_events"] == events + 1
        assert [(c["wr_id"], c["status"]) for c in s.poll(cq)] == [(w, 5)]
        s.shutdown()
    """)


def test_a_post_past_the_queue_fails_with_enomem_and_writes_nothing(run_python):
    """An RC pair of depth 4: the driver rounds the queues up (qp_cap says how far); a send
    or a receive past what a queue holds is refused with ENOMEM and reaches nothing, and
    every message posted gets through once, with its own bytes, however many are sent."""
    run_ok(run_python, """
        import errno
        from irdma_sim import Session, VerbsError
        s = Session(config_yaml="device: {max_cqe: 1000}")
        cq = s.pool_get(600)
        a, b = s.create_qp_pair(cq, cq, sq_depth=4, rq_depth=4, max_msg_bytes=64)
        cap = s.qp_cap(a)
        assert cap["max_send_wr"] >= 4 and cap["max_recv_wr"] >= 4, cap

        def refused(post):
            try:
                post()
            except VerbsError as e:
                assert e.errno == errno.ENOMEM, e
                return True
            return False

        def drain():
            got = []
            for _ in range(100):
                s.run_for_ns(20000)
                batch = s.poll(cq, 64)
                got += batch
                if not batch and got:
                    return got
            return got

        # The receive queue: full at max_recv_wr; the refused post writes nothing.
        recvs = [s.post_recv(b) for _ in range(cap["max_recv_wr"])]
        assert refused(lambda: s.post_recv(b))
        before = s.counters()
        sends = [s.post_send(a, b"m%03d" % i) for i in range(cap["max_recv_wr"])]
        got = drain()
        assert [c["wr_id"] for c in got if c["opcode"] == 128] == recvs
        assert [c["data"] for c in got if c["opcode"] == 128] == [b"m%03d" % i for i in range(len(sends))]
        assert [c["wr_id"] for c in got if c["opcode"] == 0] == sends
        assert all(c["status"] == 0 for c in got)
        assert s.counters()["messages"] - before["messages"] == len(sends)

        # The send queue: full at max_send_wr while the peer has no receive posted.
        sends = [s.post_send(a, b"s%03d" % i) for i in range(cap["max_send_wr"])]
        assert refused(lambda: s.post_send(a, b"one too many"))
        assert refused(lambda: s.post_write(a, b"nor this", window_slot=1))
        assert refused(lambda: s.post_read(a, 8, window_slot=1))
        # Receives let the sends through, a queue's worth at a time; each message once.
        received = []
        while len(received) < len(sends):
            for _ in range(min(cap["max_recv_wr"], len(sends) - len(received))):
                s.post_recv(b)
            received += [c["data"] for c in drain() if c["opcode"] == 128]
        assert received == [b"s%03d" % i for i in range(len(sends))]
        # Completions freed the queue: a post fits again.
        s.post_recv(b)
        s.post_send(a, b"after")
        assert [c["data"] for c in drain() if c["opcode"] == 128] == [b"after"]
        s.shutdown()
    """)


def test_misuse_that_used_to_do_nothing_is_refused(run_python):
    """inject_fault for a request posted already or with a code spec G.5 does not have;
    pool_put with a count no get took, or of the last get while QPs still use the CQ."""
    run_ok(run_python, """
        import errno
        from irdma_sim import Session, VerbsError

        def refused(call, code, words):
            try:
                call()
            except VerbsError as e:
                assert e.errno == code and words in str(e), e
            else:
                raise AssertionError("accepted: " + words)

        s = Session()
        cq = s.pool_get(64)
        assert s.pool_get(32) == cq  # the same pool CQ, taken twice
        a, b = s.create_qp_pair(cq, cq, sq_depth=8, rq_depth=8, max_msg_bytes=64)
        for _ in range(3):
            s.post_recv(b)
            s.post_send(a, b"x")
        refused(lambda: s.inject_fault(a, 2, 2), errno.EINVAL, "posted already")
        refused(lambda: s.inject_fault(a, 5, 999), errno.EINVAL, "flush code 999")
        refused(lambda: s.inject_fault(a, 5, 0), errno.EINVAL, "flush code 0")
        s.inject_fault(a, 3, 2)  # the next one: fine
        s.post_recv(b)
        s.post_send(a, b"fails")
        s.run_for_ns(50000)
        got = s.poll(cq, 64)
        assert [c["status"] for c in got if c["opcode"] == 0] == [0, 0, 0, 4], got

        refused(lambda: s.pool_put(cq, 100), errno.EINVAL, "taken for 64, 32")
        s.pool_put(cq, 64)  # one of the two gets
        refused(lambda: s.pool_put(cq, 32), errno.EBUSY, "still serves QP(s)")
        s.destroy_qp(a)
        s.destroy_qp(b)
        s.pool_put(cq, 32)
        refused(lambda: s.pool_put(cq, 32), errno.EINVAL, "no CQ")
        s.shutdown()
    """)


def test_a_fault_rate_that_draws_nothing_is_a_warning(tmp_path):
    import json
    import irdma_sim
    path = tmp_path / "rate.yaml"
    path.write_text(json.dumps({"name": "rate", "qp_pairs": [{"name": "p"}], "traffic": {"sends_per_qp": 100},
                                "faults": [{"pair": "p", "rate": 0.0001}]}))
    report = irdma_sim.run(path, tmp_path / "out", trace=False)
    assert report["passed"]
    assert report["warnings"] == ["the fault on pair p side a at rate 0.0001 drew none of its QP's 100 requests: "
                                  "nothing was injected"]


def test_a_stop_the_traffic_finishes_before_is_a_warning(tmp_path):
    import json
    import irdma_sim
    path = tmp_path / "stop.yaml"
    path.write_text(json.dumps({"name": "stop", "qp_pairs": [{"name": "p"}],
                                "traffic": {"sends_per_qp": 50, "stop_after_ns": 100_000_000}}))
    report = irdma_sim.run(path, tmp_path / "out", trace=False)
    assert report["passed"] and len(report["warnings"]) == 1
    assert report["warnings"][0].startswith("traffic.stop_after_ns = 100000000: the traffic finished after ")


def test_a_run_without_payload_checks_matches_the_same_completions_and_says_so(tmp_path):
    import json
    import irdma_sim
    reports = {}
    for check in (True, False):
        path = tmp_path / f"{check}.yaml"
        path.write_text(json.dumps({"name": "engine", "qp_pairs": [{"name": "p", "count": 3}],
                                    "traffic": {"sends_per_qp": 200, "ops": ["send", "write", "read", "write_imm"],
                                                "check_payload": check},
                                    "faults": [{"pair": "p1", "request": 150, "code": "prot_err"}]}))
        reports[check] = irdma_sim.run(path, tmp_path / str(check), trace=False)
        assert reports[check]["passed"], reports[check]["checks"]
    assert reports[True]["warnings"] == []
    names = {check: [c["name"] for c in reports[check]["checks"]] for check in (True, False)}
    assert "payload_integrity" in names[True]
    assert names[False] == [n for n in names[True] if n != "payload_integrity"], "no verdict on what was not compared"
    assert reports[False]["warnings"] == ["traffic.check_payload is false: no payload was generated or compared; "
                                          "every completion was still matched against its work request"]
    # What the device and the driver did does not depend on the bytes: the same completions.
    assert (tmp_path / "True" / "completions.jsonl").read_bytes() == (tmp_path / "False" / "completions.jsonl").read_bytes()
    assert reports[True]["counts"]["completions_delivered"] == reports[False]["counts"]["completions_delivered"] > 1000
