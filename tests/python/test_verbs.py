"""irdma_sim.verbs as pyverbs users write tests: cases in the manner of rdma-core's
tests/test_cq.py, test_cq_events.py and its traffic tests, written anew for this device.
Each test runs in a fresh process (the fresh_process marker)."""

import pytest

from irdma_sim.verbs import (CQ, IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_READ,
                             IBV_ACCESS_REMOTE_WRITE, IBV_QPS_ERR, IBV_QPS_INIT, IBV_QPS_RESET, IBV_QPS_RTR,
                             IBV_QPS_RTS, IBV_QPT_RC, IBV_SEND_SIGNALED, IBV_SEND_SOLICITED, IBV_WC_COMP_SWAP,
                             IBV_WC_FETCH_ADD, IBV_WC_LOC_PROT_ERR, IBV_WC_RDMA_READ, IBV_WC_RDMA_WRITE, IBV_WC_RECV,
                             IBV_WC_RECV_RDMA_WITH_IMM, IBV_WC_REM_ACCESS_ERR, IBV_WC_REM_OP_ERR, IBV_WC_SEND, IBV_WC_SUCCESS,
                             IBV_WC_WITH_IMM, IBV_WC_WR_FLUSH_ERR, IBV_WR_ATOMIC_CMP_AND_SWP,
                             IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_RDMA_READ, IBV_WR_RDMA_WRITE,
                             IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, MR, PD, QP, SGE,
                             CompChannel, Context, QPAttr, QPCap, QPInitAttr, RecvWR, SendWR, VerbsError)

pytestmark = pytest.mark.fresh_process

ALL_ACCESS = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC


class Side:
    """One end of an RC connection: its PD, MR, CQ and QP (as rdma-core's RCResources)."""

    def __init__(self, ctx, pd, cq, msg_size=1024, cap=None, access=ALL_ACCESS):
        self.ctx, self.pd, self.cq = ctx, pd, cq
        self.mr = MR(pd, msg_size * 4, access)
        self.qp = QP(pd, QPInitAttr(IBV_QPT_RC, scq=cq, rcq=cq, cap=cap or QPCap(16, 16, 2, 2)))


def connected(ctx, channel=None, **kw):
    pd = PD(ctx)
    cq_a, cq_b = CQ(ctx, 64, channel=channel), CQ(ctx, 64, channel=channel)
    a, b = Side(ctx, pd, cq_a, **kw), Side(ctx, pd, cq_b, **kw)
    for me, peer in ((a, b), (b, a)):
        assert me.qp.qp_state == IBV_QPS_RESET
        me.qp.to_init()
        me.qp.to_rtr(QPAttr(IBV_QPS_RTR, dest_qp_num=peer.qp.qp_num))
        me.qp.to_rts()
        assert me.qp.qp_state == IBV_QPS_RTS
    return a, b


def poll(cq, count, limit=2000):
    """`count` completions from `cq`, polling as a pyverbs test's poll_cq does."""
    wcs = []
    for _ in range(limit):
        _, got = cq.poll(count - len(wcs))
        wcs += got
        if len(wcs) == count:
            return wcs
    raise AssertionError(f"{len(wcs)} of {count} completions came")


def test_cqs_of_every_size_the_device_takes_and_none_beyond():
    with Context() as ctx:
        for cqe in (1, 2, 63, 1024, 4096):
            cq = CQ(ctx, cqe)
            assert cq.poll() == (0, [])
        with pytest.raises(VerbsError) as e:
            CQ(ctx, 10_000_000)
        assert e.value.errno == 22
        with pytest.raises(VerbsError):
            CQ(ctx, 0)


def test_send_and_receive_with_wr_ids_and_two_sges():
    with Context() as ctx:
        a, b = connected(ctx)
        a.mr.write(b"abcdefgh", 8, 0)
        a.mr.write(b"12345678", 8, 512)
        b.qp.post_recv(RecvWR(wr_id=0xBEEF, sg=[SGE(b.mr.buf, 6, b.mr.lkey), SGE(b.mr.buf + 100, 64, b.mr.lkey)]))
        wr = SendWR(wr_id=0xCAFE, opcode=IBV_WR_SEND, sg=[SGE(a.mr.buf, 8, a.mr.lkey), SGE(a.mr.buf + 512, 8, a.mr.lkey)])
        a.qp.post_send(wr)
        (sent,) = poll(a.cq, 1)
        (recv,) = poll(b.cq, 1)
        assert (sent.wr_id, sent.status, sent.opcode, sent.byte_len) == (0xCAFE, IBV_WC_SUCCESS, IBV_WC_SEND, 16)
        assert (recv.wr_id, recv.status, recv.opcode, recv.byte_len) == (0xBEEF, IBV_WC_SUCCESS, IBV_WC_RECV, 16)
        assert recv.qp_num == b.qp.qp_num
        # The 16 bytes scatter over the receive's SGEs in order.
        assert b.mr.read(6, 0) == b"abcdef" and b.mr.read(10, 100) == b"gh12345678"


def test_send_with_immediate_and_rdma_write_with_immediate():
    with Context() as ctx:
        a, b = connected(ctx)
        for i in range(2):
            b.qp.post_recv(RecvWR(wr_id=i, sg=[SGE(b.mr.buf + 2048, 256, b.mr.lkey)]))
        a.mr.write(b"x" * 32, 32, 0)
        a.qp.post_send(SendWR(wr_id=1, opcode=IBV_WR_SEND_WITH_IMM, imm_data=0x12345678, sg=[SGE(a.mr.buf, 32, a.mr.lkey)]))
        write = SendWR(wr_id=2, opcode=IBV_WR_RDMA_WRITE_WITH_IMM, imm_data=0xA5A5, sg=[SGE(a.mr.buf, 32, a.mr.lkey)])
        write.set_wr_rdma(b.mr.rkey, b.mr.buf + 64)
        a.qp.post_send(write)
        poll(a.cq, 2)
        first, second = poll(b.cq, 2)
        assert (first.opcode, first.wc_flags & IBV_WC_WITH_IMM, first.imm_data) == (IBV_WC_RECV, IBV_WC_WITH_IMM, 0x12345678)
        assert (second.opcode, second.imm_data, second.byte_len) == (IBV_WC_RECV_RDMA_WITH_IMM, 0xA5A5, 32)
        assert b.mr.read(32, 64) == b"x" * 32


def test_rdma_write_read_and_atomics_move_the_right_bytes():
    with Context(config_yaml="device: {generation: 3}") as ctx:  # atomics are GEN_3's
        a, b = connected(ctx)
        a.mr.write(bytes(range(100)), 100, 0)
        w = SendWR(wr_id=10, opcode=IBV_WR_RDMA_WRITE, sg=[SGE(a.mr.buf, 100, a.mr.lkey)])
        w.set_wr_rdma(b.mr.rkey, b.mr.buf + 1000)
        r = SendWR(wr_id=11, opcode=IBV_WR_RDMA_READ, sg=[SGE(a.mr.buf + 2000, 100, a.mr.lkey)])
        r.set_wr_rdma(b.mr.rkey, b.mr.buf + 1000)
        b.mr.write((40).to_bytes(8, "little"), 8, 3000)
        fa = SendWR(wr_id=12, opcode=IBV_WR_ATOMIC_FETCH_AND_ADD, sg=[SGE(a.mr.buf + 3000, 8, a.mr.lkey)])
        fa.set_wr_atomic(b.mr.rkey, b.mr.buf + 3000, 2)
        cs = SendWR(wr_id=13, opcode=IBV_WR_ATOMIC_CMP_AND_SWP, sg=[SGE(a.mr.buf + 3008, 8, a.mr.lkey)])
        cs.set_wr_atomic(b.mr.rkey, b.mr.buf + 3000, 42, 7)
        w.next_wr, r.next_wr, fa.next_wr = r, fa, cs  # one post, one doorbell
        a.qp.post_send(w)
        wcs = poll(a.cq, 4)
        assert [(c.wr_id, c.status, c.opcode) for c in wcs] == [
            (10, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE), (11, IBV_WC_SUCCESS, IBV_WC_RDMA_READ),
            (12, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD), (13, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP)]
        assert b.mr.read(100, 1000) == bytes(range(100)) == a.mr.read(100, 2000)
        assert int.from_bytes(a.mr.read(8, 3000), "little") == 40  # fetched before the add
        assert int.from_bytes(a.mr.read(8, 3008), "little") == 42  # compared equal: swapped
        assert int.from_bytes(b.mr.read(8, 3000), "little") == 7


def test_cq_events_come_once_armed_and_are_acknowledged():
    with Context() as ctx:
        channel = CompChannel(ctx)
        a, b = connected(ctx, channel=channel)
        b.cq.req_notify()
        b.qp.post_recv(RecvWR(wr_id=1, sg=[SGE(b.mr.buf, 64, b.mr.lkey)]))
        a.qp.post_send(SendWR(wr_id=2, sg=[SGE(a.mr.buf, 8, a.mr.lkey)]))
        assert channel.get_cq_event(b.cq) is b.cq
        b.cq.ack_events(1)
        assert [c.wr_id for c in poll(b.cq, 1)] == [1]
        # Not armed again: the next completion raises no event.
        b.qp.post_recv(RecvWR(wr_id=3, sg=[SGE(b.mr.buf, 64, b.mr.lkey)]))
        a.qp.post_send(SendWR(wr_id=4, sg=[SGE(a.mr.buf, 8, a.mr.lkey)]))
        poll(b.cq, 1)
        with pytest.raises(VerbsError) as e:
            channel.get_cq_event(b.cq)
        assert e.value.errno == 110
        with pytest.raises(VerbsError):
            b.cq.ack_events(1)


def test_a_solicited_only_arm_ignores_unsolicited_completions():
    with Context() as ctx:
        channel = CompChannel(ctx)
        a, b = connected(ctx, channel=channel)
        b.cq.req_notify(solicited_only=True)
        for i in range(2):
            b.qp.post_recv(RecvWR(wr_id=i, sg=[SGE(b.mr.buf, 64, b.mr.lkey)]))
        a.qp.post_send(SendWR(wr_id=10, sg=[SGE(a.mr.buf, 8, a.mr.lkey)]))
        poll(b.cq, 1)
        ctx.run_for_ns(50_000)
        assert b.cq._events() == 0, "an unsolicited SEND raised an event"
        a.qp.post_send(SendWR(wr_id=11, send_flags=IBV_SEND_SIGNALED | IBV_SEND_SOLICITED, sg=[SGE(a.mr.buf, 8, a.mr.lkey)]))
        channel.get_cq_event(b.cq)
        b.cq.ack_events(1)


def test_qp_state_moves_follow_the_state_table():
    with Context() as ctx:
        pd, cq = PD(ctx), CQ(ctx, 16)
        qp = QP(pd, QPInitAttr(IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(4, 4)))
        assert qp.cap.max_send_wr >= 4 and qp.cap.max_recv_wr >= 4
        mr = MR(pd, 64, ALL_ACCESS)
        with pytest.raises(VerbsError) as e:
            qp.post_send(SendWR(sg=[SGE(mr.buf, 8, mr.lkey)]))  # in RESET
        assert e.value.errno == 22
        with pytest.raises(VerbsError):
            qp.to_rts()  # RESET -> RTS skips INIT and RTR
        qp.to_init()
        assert qp.qp_state == IBV_QPS_INIT
        with pytest.raises(VerbsError) as e:
            qp.modify(QPAttr(IBV_QPS_RTR, 5, qkey=0x11111111))  # a Q_Key is for UD QPs
        assert e.value.errno == 22 and qp.qp_state == IBV_QPS_INIT
        qp.modify(QPAttr(IBV_QPS_ERR))
        assert qp.qp_state == IBV_QPS_ERR
        with pytest.raises(VerbsError) as e:
            pd.close()  # an MR and a QP still belong to it
        assert e.value.errno == 16
        qp.close()
        mr.close()
        pd.close()


def test_bad_flows_a_wrong_rkey_a_read_past_the_region_or_a_write_without_rights_fail():
    with Context() as ctx:
        a, b = connected(ctx)
        bad_key = SendWR(wr_id=1, opcode=IBV_WR_RDMA_WRITE, sg=[SGE(a.mr.buf, 8, a.mr.lkey)])
        bad_key.set_wr_rdma(b.mr.rkey ^ 0x100, b.mr.buf)
        behind = SendWR(wr_id=2, opcode=IBV_WR_SEND, sg=[SGE(a.mr.buf, 8, a.mr.lkey)])
        bad_key.next_wr = behind
        a.qp.post_send(bad_key)
        first, second = poll(a.cq, 2)
        assert (first.wr_id, first.status) == (1, IBV_WC_REM_ACCESS_ERR)
        assert (second.wr_id, second.status) == (2, IBV_WC_WR_FLUSH_ERR)
        # A fresh connection: an RDMA READ that runs past the end of the peer's region.
        c, d = connected(ctx)
        past = SendWR(wr_id=3, opcode=IBV_WR_RDMA_READ, sg=[SGE(c.mr.buf, 64, c.mr.lkey)])
        past.set_wr_rdma(d.mr.rkey, d.mr.buf + d.mr.length - 32)
        c.qp.post_send(past)
        (read,) = poll(c.cq, 1)
        assert (read.wr_id, read.status) == (3, IBV_WC_REM_ACCESS_ERR)
        # A read-only region refuses a remote write.
        c2, d2 = connected(ctx)
        ro = MR(d2.pd, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ)
        write = SendWR(wr_id=4, opcode=IBV_WR_RDMA_WRITE, sg=[SGE(c2.mr.buf, 8, c2.mr.lkey)])
        write.set_wr_rdma(ro.rkey, ro.buf)
        c2.qp.post_send(write)
        assert poll(c2.cq, 1)[0].status == IBV_WC_REM_ACCESS_ERR
    with pytest.raises(Exception):
        Context()  # one Context per process: SystemC elaborates once


def test_a_send_queue_full_refuses_the_rest_of_a_chain_and_keeps_what_fit():
    with Context() as ctx:
        a, b = connected(ctx, cap=QPCap(4, 4, 1, 1))
        assert a.qp.cap.max_send_wr >= 4
        wrs = [SendWR(wr_id=i, opcode=IBV_WR_RDMA_WRITE, sg=[SGE(a.mr.buf, 8, a.mr.lkey)]) for i in range(1000)]
        for w in wrs:
            w.set_wr_rdma(b.mr.rkey, b.mr.buf)
        for w, nxt in zip(wrs, wrs[1:]):
            w.next_wr = nxt
        with pytest.raises(VerbsError) as e:
            a.qp.post_send(wrs[0])
        assert e.value.errno == 12
        fit = int(str(e.value).split("work request ")[1].split()[0])
        assert a.qp.cap.max_send_wr <= fit < 1000  # the ring holds at least what the caps promise
        # Those before the one that did not fit were posted and complete, in order.
        assert [c.wr_id for c in poll(a.cq, fit)] == list(range(fit))


def test_protection_domains_keep_their_keys_to_their_own_qps():
    with Context() as ctx:
        a, b = connected(ctx)  # a PD of their own
        c, d = connected(ctx)  # another
        # An lkey of another PD: the sender's protection error, nothing sent.
        b.qp.post_recv(RecvWR(wr_id=1, sg=[SGE(b.mr.buf, 64, b.mr.lkey)]))
        a.qp.post_send(SendWR(wr_id=2, sg=[SGE(c.mr.buf, 8, c.mr.lkey)]))
        (sent,) = poll(a.cq, 1)
        assert (sent.wr_id, sent.status) == (2, IBV_WC_LOC_PROT_ERR)
        # An rkey of another PD: the responder refuses it.
        w = SendWR(wr_id=3, opcode=IBV_WR_RDMA_WRITE, sg=[SGE(c.mr.buf, 8, c.mr.lkey)])
        w.set_wr_rdma(b.mr.rkey, b.mr.buf)
        c.qp.post_send(w)
        (wrote,) = poll(c.cq, 1)
        assert (wrote.wr_id, wrote.status) == (3, IBV_WC_REM_ACCESS_ERR)
        assert b.mr.read(8, 0) == bytes(8), "nothing landed"


def test_local_keys_are_checked_for_their_key_their_bounds_and_local_write():
    with Context() as ctx:
        for case in ("wrong key", "past the end", "no local write"):
            a, b = connected(ctx)
            lkey, addr, length = a.mr.lkey, a.mr.buf, 8
            if case == "wrong key":
                lkey ^= 0x1
            elif case == "past the end":
                addr = a.mr.buf + a.mr.length - 4
            b.qp.post_recv(RecvWR(wr_id=1, sg=[SGE(b.mr.buf, 64, b.mr.lkey)]))
            if case == "no local write":
                # An RDMA READ lands in the sender's buffer: it needs LOCAL_WRITE there.
                ro = MR(a.pd, 64, IBV_ACCESS_REMOTE_READ)
                wr = SendWR(wr_id=2, opcode=IBV_WR_RDMA_READ, sg=[SGE(ro.buf, 8, ro.lkey)])
                wr.set_wr_rdma(b.mr.rkey, b.mr.buf)
            else:
                wr = SendWR(wr_id=2, sg=[SGE(addr, length, lkey)])
            a.qp.post_send(wr)
            (done,) = poll(a.cq, 1)
            assert (done.wr_id, done.status) == (2, IBV_WC_LOC_PROT_ERR), case


def test_a_receive_buffer_the_responder_may_not_write_fails_both_sides():
    with Context() as ctx:
        a, b = connected(ctx)
        ro = MR(b.pd, 64, IBV_ACCESS_REMOTE_READ)  # no LOCAL_WRITE
        b.qp.post_recv(RecvWR(wr_id=1, sg=[SGE(ro.buf, 64, ro.lkey)]))
        a.qp.post_send(SendWR(wr_id=2, sg=[SGE(a.mr.buf, 8, a.mr.lkey)]))
        (sent,) = poll(a.cq, 1)
        (recv,) = poll(b.cq, 1)
        assert (sent.wr_id, sent.status) == (2, IBV_WC_REM_OP_ERR)
        assert (recv.wr_id, recv.status) == (1, IBV_WC_LOC_PROT_ERR)



def test_the_plugin_reports_a_childs_skip_as_a_skip_and_its_death_as_a_failure(tmp_path):
    import subprocess
    import sys
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["irdma_sim.pytest_plugin"]\n')
    (tmp_path / "test_child.py").write_text(
        "import os, pytest\n"
        "pytestmark = pytest.mark.fresh_process\n"
        "def test_skips():\n    pytest.skip('not here')\n"
        "def test_dies():\n    os._exit(9)\n"
        "def test_passes():\n    assert os.getpid()\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert "1 failed, 1 passed, 1 skipped" in proc.stdout, proc.stdout
    assert "not here" in proc.stdout and "exit 9" in proc.stdout


def test_what_is_not_offered_or_does_not_fit_is_refused_not_ignored():
    with Context() as ctx:
        with pytest.raises(VerbsError) as e:
            QPCap(4, 4, 1, 1, max_inline_data=64)
        assert e.value.errno == 95
        with pytest.raises(VerbsError) as e:
            QPInitAttr(qp_type=4)  # IBV_QPT_UD: no address handles to send datagrams anywhere
        assert e.value.errno == 95
        a, b = connected(ctx)
        with pytest.raises(VerbsError) as e:
            SendWR(num_sge=3, sg=[SGE(a.mr.buf, 8, a.mr.lkey)])
        assert e.value.errno == 22
        # num_sge takes the first of the SGEs given, as pyverbs does.
        b.qp.post_recv(RecvWR(wr_id=1, sg=[SGE(b.mr.buf, 64, b.mr.lkey)]))
        a.qp.post_send(SendWR(wr_id=2, num_sge=1, sg=[SGE(a.mr.buf, 8, a.mr.lkey), SGE(a.mr.buf, 8, a.mr.lkey)]))
        assert poll(b.cq, 1)[0].byte_len == 8
        # A CQ without a channel has no events to wait for.
        with pytest.raises(VerbsError) as e:
            CompChannel(ctx).get_cq_event(a.cq)
        assert e.value.errno == 22
        # A CQ is freed once no QP uses it.
        with pytest.raises(VerbsError) as e:
            a.cq.close()
        assert e.value.errno == 16
        a.qp.close()
        a.cq.close()
        a.cq.close()  # closed already: nothing more to do
        assert a.cq.cq_num is None
