// Errors: a request that fails moves its QP to error and flushes its queues, as FLUSH_WQES
// does; and the test bench's fault injection.
#include "model/device/qp_engine.h"

#include <algorithm>

#include "model/device/descriptor_fields.h"
#include "model/device/stag_table.h"

namespace irdma_sim::device {

using namespace regs;

// A work request the device cannot carry out moves its QP to error: its queues flush, the
// first WQE with the error's code (IB semantics for a completion in error).
QpEngine::Result QpEngine::fail(QpContext& qp, uint16_t minor) {
  if (dma_.mastering()) counters_.wqe_errors++;  // else the host stopped it mid-request
  enter_error(qp, minor);
  return Result::failed;
}

QpEngine::Result QpEngine::payload_dma_failed(QpContext& qp) {
  qp.error_ae = AE_LOCAL_QP_CATASTROPHIC;
  return fail(qp, FLUSH_PROT_ERR);
}

namespace {

// The event a flush code stands for (what irdma_set_flush_fields maps back); 0 for a
// general flush, which reports no error of its own.
uint16_t ae_of(uint16_t minor, uint16_t error_ae) {
  switch (minor) {
    case FLUSH_PROT_ERR: return error_ae ? error_ae : AE_AMP_INVALID_STAG;
    case FLUSH_REM_ACCESS_ERR: return AE_IB_REMOTE_ACCESS_ERROR;
    case FLUSH_LOC_QP_OP_ERR: return AE_WQE_UNEXPECTED_OPCODE;
    case FLUSH_REM_OP_ERR: return AE_IB_REMOTE_OP_ERROR;
    case FLUSH_LOC_LEN_ERR: return AE_DDP_MESSAGE_TOO_LONG;
    case FLUSH_FATAL_ERR: return AE_LCE_QP_CATASTROPHIC;
    case FLUSH_RETRY_EXC_ERR: return AE_LLP_TOO_MANY_RETRIES;
    case FLUSH_MW_BIND_ERR: return AE_AMP_MWBIND_INVALID_RIGHTS;
    case FLUSH_REM_INV_REQ_ERR: return AE_IB_INVALID_REQUEST;
    default: return 0;
  }
}

}  // namespace

// The event names the queue whose code is the error's: the SQ's, else the RQ's.
void QpEngine::enter_error(QpContext& qp, bool sq, bool rq, uint16_t sq_minor, uint16_t rq_minor) {
  if (!qp.in_error) {
    const bool from_sq = sq && sq_minor != FLUSH_GENERAL_ERR;
    if (const uint16_t ae = ae_of(from_sq ? sq_minor : rq_minor, qp.error_ae))
      aeq_.post({qp.compl_ctx, qp.id, ae, from_sq ? AE_SOURCE_SQ : AE_SOURCE_RQ});
  }
  move_to_error(qp, sq, rq, sq_minor, rq_minor);
}

void QpEngine::move_to_error(QpContext& qp, bool sq, bool rq, uint16_t sq_minor, uint16_t rq_minor) {
  if (!qp.in_error) counters_.qps_in_error++;
  qp.in_error = true;
  trace_.event(time_.now_ps(), "qp_error").num("qp", qp.id).num("sq_minor", sq_minor).num("rq_minor", rq_minor);
  if (sq) flush_sq(qp, sq_minor);
  if (rq) flush_rq(qp, rq_minor);
}

uint16_t QpEngine::flush(uint32_t qp_id, bool sq, bool rq, uint16_t sq_minor, uint16_t rq_minor) {
  auto it = qps_.find(qp_id);
  if (it == qps_.end()) return CQP_MINOR_NO_SUCH_OBJECT;
  move_to_error(it->second, sq, rq, sq_minor, rq_minor);
  return 0;
}

bool QpEngine::inject_fault(uint32_t qp_id, uint64_t nth, uint16_t minor) {
  auto it = qps_.find(qp_id);
  if (it == qps_.end() || nth < it->second.requests) return false;
  it->second.fault_at = int64_t(nth);
  it->second.fault_minor = minor;
  return true;
}

void QpEngine::post_flush_cqe(const QpContext& qp, bool sq, uint16_t wqe_idx, uint8_t op,
                              uint16_t minor) {
  CqeFields f;
  f.qp_ctx = qp.compl_ctx;
  f.qp_id = qp.id;
  f.wqe_idx = wqe_idx;
  f.op = op;
  f.sq = sq;
  f.error = true;
  f.major_err = FLUSH_MAJOR;
  f.minor_err = minor;
  // One its CQ had no room for (overflowed, or in error) was never written.
  if (cqs_.post(sq ? qp.send_cq : qp.recv_cq, f)) counters_.flush_cqes++;
}

// GEN_2 writes one flush CQE for a queue with work in it and leaves the driver to report
// every WQE from its tail; GEN_3 writes one per WQE (spec D.4 step 9, D.10).
void QpEngine::flush_sq(QpContext& qp, uint16_t minor) {
  for (bool first = true;; first = false) {
    uint64_t hdr[4];
    if (!dma_.read(qp.sq_base + uint64_t(qp.sq_head.idx) * kQuantum, hdr, kQuantum) ||
        bit(hdr[3], WQE_VALID) != qp.sq_head.polarity)
      return;
    const uint8_t op = uint8_t(get(hdr[3], SQ_WQE_OPCODE));
    if (op != SQ_NOP || cfg_.generation < 3)
      post_flush_cqe(qp, true, uint16_t(qp.sq_head.idx), op, first ? minor : FLUSH_GENERAL_ERR);
    if (cfg_.generation < 3) return;
    qp.sq_head.advance(qp.sq_quanta, std::min(wqe_quanta(hdr[3]), qp.sq_quanta - qp.sq_head.idx));
  }
}

void QpEngine::flush_rq(QpContext& qp, uint16_t minor) {
  const uint32_t rwqe_bytes = kQuantum << qp.rq_shift;
  for (bool first = true;; first = false) {
    uint64_t hdr[4];
    if (!dma_.read(qp.rq_base + uint64_t(qp.rq_head.idx) * rwqe_bytes, hdr, kQuantum) ||
        bit(hdr[3], WQE_VALID) != qp.rq_head.polarity)
      return;
    post_flush_cqe(qp, false, uint16_t(qp.rq_head.idx << qp.rq_shift), 0,
                   first ? minor : FLUSH_GENERAL_ERR);
    if (cfg_.generation < 3) return;
    qp.rq_head.advance(qp.rq_wqes);
  }
}

}  // namespace irdma_sim::device
