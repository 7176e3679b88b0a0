// Flushing a QP's work: FLUSH_WQES through the CQP (spec F.7), and the completions the
// driver makes itself for work the device will never see (spec G.7).
#include <algorithm>
#include <cerrno>
#include <vector>

#include "driver/irdma/irdma_device.h"

namespace irdma {

using namespace ibcore;

// A ULP's move to error carries no asynchronous event: every WQE flushes as general.
int irdma_device::irdma_flush_wqes(irdma_qp* qp) {
  return cqp().exec(IRDMA_CQP_OP_FLUSH_WQES, [&](uint64_t* wqe) {
    wqe[2] = FIELD_PREP(IRDMA_CQPSQ_FWQE_SQMJERR, IRDMA_FLUSH_MAJOR_ERR) |
             FIELD_PREP(IRDMA_CQPSQ_FWQE_SQMNERR, FLUSH_GENERAL_ERR) |
             FIELD_PREP(IRDMA_CQPSQ_FWQE_RQMJERR, IRDMA_FLUSH_MAJOR_ERR) |
             FIELD_PREP(IRDMA_CQPSQ_FWQE_RQMNERR, FLUSH_GENERAL_ERR);
    return FIELD_PREP(IRDMA_CQPSQ_QP_QPID, qp->qp_num) | IRDMA_CQPSQ_FWQE_USERFLCODE |
           IRDMA_CQPSQ_FWQE_FLUSHSQ | IRDMA_CQPSQ_FWQE_FLUSHRQ;
  });
}

int irdma_device::flush_qp(irdma_qp* qp) {
  {
    std::lock_guard<hal::Lock> guard(*qp->lock);
    if (qp->flush_issued) return -EALREADY;
  }
  if (const int ret = irdma_flush_wqes(qp)) return ret;
  {
    std::lock_guard<hal::Lock> guard(*qp->lock);
    qp->flush_issued = true;
  }
  flush_wq_.schedule(qp);
  return 0;
}

// The AEQ reports CQ errors only: the driver learns that the device flushed a QP from the
// first flush CQE it polls for it. The CQ is locked: a QP noted here is alive.
void irdma_device::take_newly_flushed(irdma_cq* cq) {
  for (irdma_qp_uk* uk : cq->sc_cq.newly_flushed) {
    irdma_qp* qp = to_iwqp(uk);
    {
      std::lock_guard<hal::Lock> guard(*qp->lock);
      qp->flush_issued = true;
    }
    flush_wq_.schedule(qp);
  }
  cq->sc_cq.newly_flushed.clear();
}

// irdma_generate_flush_completions for one QP, queue by queue: the CQ locked, then the QP.
// Unpolled CQEs of the QP come first, in the current ring or a retired one: they may stand
// for the same WQEs, so the work runs again later.
bool irdma_device::run_flush_work(irdma_qp* qp) {
  bool again = false;
  for (bool sq : {true, false}) {
    auto* cq = static_cast<irdma_cq*>(sq ? qp->send_cq : qp->recv_cq);
    size_t generated = 0;
    {
      std::lock_guard<hal::Lock> cq_guard(*cq->lock);
      bool held = irdma_uk_cq_holds_qp(&cq->sc_cq, qp->qp_uk.compl_ctx);
      for (const irdma_cq::retired_buf& b : cq->resize_list)
        held = held || irdma_uk_cq_holds_qp(&b.uk, qp->qp_uk.compl_ctx);
      // Once the device is given up nothing more lands, and recover_from_reset had every CQ
      // polled: what is still there a flush delay later lies behind an entry that never
      // will (a refused CQE, or a torn one), where no poll reaches it.
      const uint64_t given_up = rf_.reset.requested_ns();
      if (given_up && hw().exec.now_ns() >= given_up + IRDMA_FLUSH_DELAY_NS) held = false;
      if (held) {
        again = true;
      } else {
        std::lock_guard<hal::Lock> qp_guard(*qp->lock);
        generated = generate_flush_completions(qp, sq);
      }
    }
    // Handlers may poll: the CQ lives on, its QP's destroy waits for this work.
    if (generated) irdma_comp_handler(cq);
  }
  return again;
}

// Every WQE from the ring's tail becomes a general flush completion, in order; SQ NOPs
// complete silently.
size_t irdma_device::generate_flush_completions(irdma_qp* qp, bool sq) {
  irdma_qp_uk& q = qp->qp_uk;
  auto* cq = static_cast<irdma_cq*>(sq ? qp->send_cq : qp->recv_cq);
  const size_t before = cq->cmpl_generated.size();
  irdma_cq_poll_info rec;
  rec.comp_status = IRDMA_COMPL_STATUS_FLUSHED;
  rec.error = true;
  rec.major_err = IRDMA_FLUSH_MAJOR_ERR;
  rec.minor_err = FLUSH_GENERAL_ERR;
  rec.qp_handle = &q;
  rec.qp_id = q.qp_id;
  rec.q_type = sq ? IRDMA_CQE_QTYPE_SQ : IRDMA_CQE_QTYPE_RQ;
  if (sq) {
    while (ring_used(q.sq_ring)) {
      const irdma_sq_wr_trk_info& trk = q.sq_wrtrk_array[q.sq_ring.tail];
      smp_store_release(q.sq_ring.tail, ring_add(q.sq_ring.tail, trk.quanta ? trk.quanta : 1, q.sq_ring.size));
      if (trk.op == IRDMA_OP_TYPE_NOP) continue;
      rec.wr_id = trk.wrid;
      rec.op_type = trk.op;
      cq->cmpl_generated.push_back(rec);
    }
    q.sq_flush_complete = true;
  } else {
    rec.op_type = IRDMA_OP_TYPE_REC;
    while (ring_used(q.rq_ring)) {
      rec.wr_id = q.rq_wrid_array[q.rq_ring.tail];
      smp_store_release(q.rq_ring.tail, ring_next(q.rq_ring.tail, q.rq_ring.size));
      cq->cmpl_generated.push_back(rec);
    }
    q.rq_flush_complete = true;
  }
  return cq->cmpl_generated.size() - before;
}

// Events the device can no longer raise: every armed CQ's consumer polls what landed (the
// flush work waits for that, run_flush_work).
void irdma_device::recover_from_reset() {
  {
    // A QP still in the table has not reached free_qp's cancel of its flush work.
    std::lock_guard<hal::Lock> guard(*rf_.rsrc_lock);
    for (irdma_qp_uk* uk : rf_.qp_table) {
      if (!uk || to_iwqp(uk)->user_mode) continue;  // a user QP's rings are its provider's to flush
      irdma_qp* qp = to_iwqp(uk);
      {
        std::lock_guard<hal::Lock> qp_guard(*qp->lock);
        qp->flush_issued = true;
      }
      flush_wq_.schedule(qp);
    }
  }
  std::vector<uint64_t> cqs;
  {
    std::lock_guard<hal::Lock> guard(*rf_.rsrc_lock);
    for (const irdma_cq* cq : rf_.cq_table)
      if (cq) cqs.push_back(cq->ctx);
  }
  for (const uint64_t ctx : cqs)
    if (irdma_cq* cq = rf_.irdma_cq_add_ref(ctx)) {
      irdma_comp_handler(cq);
      irdma_pci_f::irdma_cq_rem_ref(cq);
    }
  if (event_handler) event_handler({this, nullptr, IB_EVENT_DEVICE_FATAL});
}

}  // namespace irdma
