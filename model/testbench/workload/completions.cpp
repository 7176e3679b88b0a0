// Completion handling: the done callbacks the CQs' poll contexts run, which count and log
// each ib_wc and check it, and the data it moved, against the scoreboard.

#include <algorithm>
#include <cstring>
#include <iterator>
#include <mutex>

#include "model/testbench/host.h"
#include "model/testbench/workload/bookkeeping.h"
#include "model/testbench/workload/payload.h"

namespace irdma_sim::testbench {

using namespace ibcore;

bool Workload::completed(const WrCtx& ctx, ib_wc& wc) {
  expect_struck();
  wc.wr_id = ctx.wr_id;
  counters_.completions++;
  if (wc.status < counters_.by_status.size()) counters_.by_status[wc.status]++;
  // The kernel has no ib_wc opcode for a BIND_MW or a signaled NOP: they complete as
  // IB_WC_GENERAL_ERR, flushed or not; before the QP broke, that was a success.
  const bool unmapped_success = (ctx.op == TrafficOp::bind_mw || ctx.op == TrafficOp::nop) &&
                                wc.status == IB_WC_GENERAL_ERR && !ctx.qp->broken;
  ctx.qp->completions++;
  mark_ready(*ctx.qp);
  cover_status(wc, wc.status == IB_WC_SUCCESS || unmapped_success);
  if (ctx.cqe.done == &Workload::on_send_done)
    cover_send(ctx, wc, wc.status == IB_WC_SUCCESS || unmapped_success);
  else
    cover_recv(wc);
  if (wc.status != IB_WC_SUCCESS && !unmapped_success) {
    ctx.qp->broken = true;
    if (wc.vendor_err >> 16 == irdma::IRDMA_FLUSH_MAJOR_ERR) counters_.flushed++;
  }
  auto it = std::find_if(counters_.by_opcode.begin(), counters_.by_opcode.end(),
                         [&](const auto& p) { return p.first == wc.opcode; });
  if (it == counters_.by_opcode.end())
    counters_.by_opcode.emplace_back(wc.opcode, 1);
  else
    it->second++;
  const uint32_t cq_num = ctx.qp->cq_num;
  if (cq_num >= delivered_on_.size()) delivered_on_.resize(cq_num + 1);
  if (!delivered_on_[cq_num]) {
    delivered_on_[cq_num] = true;
    counters_.cqs_with_completions++;
  }
  // The QP the driver named, unless it was destroyed while this completion was on its way.
  const uint32_t qp_num = ctx.qp->torn_down ? ctx.qp->qp_num : wc.qp ? wc.qp->qp_num : 0;
  log_.write(host_.now_ps(), ctx.posted_ps, cq_num, ctx.wr_id, qp_num, wc);
  // A pair torn down while this completion was on its way here: its QPs' buffers may be
  // gone and nothing more is expected of them.
  return !ctx.qp->torn_down;
}

void Workload::cover_send(const WrCtx& ctx, const ib_wc& wc, bool success) {
  coverage_.hit(trace::Cover::sq_completion, {unsigned(ctx.op), ctx.signaled ? 0u : 1u,
                                              success ? 0u : wc.status == IB_WC_WR_FLUSH_ERR ? 1u : 2u});
}

void Workload::cover_recv(const ib_wc& wc) {
  unsigned kind = 0;  // IB_WC_RECV
  if (wc.opcode == IB_WC_RECV_RDMA_WITH_IMM)
    kind = 3;
  else if (wc.wc_flags & IB_WC_WITH_IMM)
    kind = 1;
  else if (wc.wc_flags & IB_WC_WITH_INVALIDATE)
    kind = 2;
  coverage_.hit(trace::Cover::rq_completion,
                {kind, wc.status == IB_WC_SUCCESS ? 0u : wc.status == IB_WC_WR_FLUSH_ERR ? 1u : 2u});
}

// wc_status's axis, in its order: the statuses irdma's flush codes map to.
void Workload::cover_status(const ib_wc& wc, bool success) {
  static constexpr ib_wc_status kStatuses[] = {
      IB_WC_SUCCESS,       IB_WC_WR_FLUSH_ERR,   IB_WC_LOC_LEN_ERR,   IB_WC_LOC_QP_OP_ERR,     IB_WC_LOC_PROT_ERR,
      IB_WC_MW_BIND_ERR,   IB_WC_REM_INV_REQ_ERR, IB_WC_REM_ACCESS_ERR, IB_WC_REM_OP_ERR,      IB_WC_RETRY_EXC_ERR,
      IB_WC_RNR_RETRY_EXC_ERR, IB_WC_FATAL_ERR,  IB_WC_GENERAL_ERR};
  const ib_wc_status status = success ? IB_WC_SUCCESS : wc.status;
  unsigned at = 0;
  while (at < std::size(kStatuses) && kStatuses[at] != status) at++;
  if (at == std::size(kStatuses)) return;  // a status irdma never reports: the scoreboard says so
  coverage_.hit(trace::Cover::wc_status, {at, sc_.config.device.generation >= 3 ? 1u : 0u});
}

void Workload::on_send_done(ib_cq*, ib_wc* wc) {
  const WrCtx& ctx = *reinterpret_cast<WrCtx*>(wc->wr_cqe);
  Workload& wl = *ctx.wl;
  const std::lock_guard<hal::Lock> held(*wl.lock_);
  ib_wc copy = *wc;
  if (!wl.completed(ctx, copy)) return;
  Qp& q = *ctx.qp;
  wl.sb_.check_send(q.index, copy, wc->status != IB_WC_SUCCESS || wl.moved_right(q, ctx));
  q.sends_done = ctx.seq + 1;  // it retires every unsignaled WR before it
  wl.update_finished(q);
  wl.wake_poster(q);
}

void Workload::on_recv_done(ib_cq*, ib_wc* wc) {
  const WrCtx& ctx = *reinterpret_cast<WrCtx*>(wc->wr_cqe);
  Workload& wl = *ctx.wl;
  const std::lock_guard<hal::Lock> held(*wl.lock_);
  ib_wc copy = *wc;
  if (!wl.completed(ctx, copy)) return;
  Qp& q = *ctx.qp;
  q.recvs_done++;
  wl.update_finished(q);
  bool payload_ok = true;
  if (wc->status != IB_WC_SUCCESS) {
    q.rq_error = true;
    q.incoming.clear();
    q.writes_to_check.clear();
  } else if (!q.incoming.empty()) {
    // A SEND's bytes are in the receive buffer, a WRITE's in this QP's window.
    const Incoming msg = q.incoming.front();
    q.incoming.pop_front();
    if (msg.op == TrafficOp::write_imm) q.writes_to_check.pop_front();
    if (wl.sc_.traffic.check_payload) {
      const uint8_t* at = msg.op == TrafficOp::send
                              ? q.bq->recv_slot(ctx.slot)
                              : q.bq->window_slot(uint32_t(msg.seq % q.peer->bq->sq_depth()));
      const uint32_t len = std::min(wc->byte_len, q.bq->slot_bytes());
      payload_ok = payload_equals(at, len, payload_key(wl.sc_.seed, q.peer->index, msg.seq));
    }
  }
  wl.sb_.check_recv(q.index, copy, payload_ok);
  if (q.recvs_posted < q.recvs_total) wl.post_recv(q);
  wl.wake_poster(q);
  // The peer's credit (UD) or a window slot it waits for may be free.
  wl.mark_ready(*q.peer);
  if (q.peer->bq) wl.wake_poster(*q.peer);
}

// After a successful SQ completion: an RDMA WRITE's data is at the peer, a READ's is here,
// an atomic returned the original value and left the new one. Without payload checks the
// bytes are taken as they came.
bool Workload::moved_right(const Qp& q, const WrCtx& ctx) const {
  const BufferedQp& peer = *q.peer->bq;
  const auto landed = [&](const uint8_t* at, uint64_t key) {
    return !sc_.traffic.check_payload || payload_equals(at, ctx.len, key);
  };
  switch (ctx.op) {
    case TrafficOp::send:       // checked at the receiver
    case TrafficOp::local_inv:  // moves no data
    case TrafficOp::reg_mr:
    case TrafficOp::bind_mw:
    case TrafficOp::nop:
      return true;
    case TrafficOp::read:
      return landed(q.bq->send_slot(ctx.slot), read_source_key(sc_.seed, q.peer->index, ctx.slot));
    case TrafficOp::read_inv:  // its sink is its source, in the region it invalidated
      return landed(peer.window_slot(peer.sq_depth() + ctx.slot), read_source_key(sc_.seed, q.peer->index, ctx.slot));
    case TrafficOp::write:
    case TrafficOp::write_imm:
      return landed(peer.window_slot(ctx.slot), payload_key(sc_.seed, q.index, ctx.seq));
    case TrafficOp::fetch_add:
    case TrafficOp::cmp_swap: {
      uint64_t returned, left;
      std::memcpy(&returned, q.bq->send_slot(ctx.slot), 8);
      std::memcpy(&left, peer.window_slot(2 * peer.sq_depth() + ctx.slot), 8);
      return returned == ctx.original && left == ctx.after;
    }
  }
  return false;
}

}  // namespace irdma_sim::testbench
