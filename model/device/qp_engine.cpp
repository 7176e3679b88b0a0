// The QP table: contexts loaded from host memory by CREATE_QP and MODIFY_QP, and the SQ
// doorbell's loop, which hands each WQE fetched to the stage that carries it out.
#include "model/device/qp_engine.h"

#include <algorithm>

#include "model/device/descriptor_fields.h"

namespace irdma_sim::device {

using namespace regs;

namespace {

constexpr unsigned kQpCtxBytes = 256;

bool executable(uint8_t op) {
  switch (op) {
    case SQ_SEND:
    case SQ_SEND_INV:
    case SQ_SEND_SOL:
    case SQ_SEND_SOL_INV:
    case SQ_RDMA_WRITE:
    case SQ_RDMA_WRITE_SOL:
    case SQ_RDMA_READ:
    case SQ_RDMA_READ_INV_STAG:
    case SQ_ATOMIC_FETCH_ADD:
    case SQ_ATOMIC_COMPARE_SWAP: return true;
    default: return false;
  }
}

}  // namespace

QpEngine::QpEngine(const DeviceConfig& cfg, DmaPort& dma, EngineTime& time, CqEngine& cqs, AeqEngine& aeq,
                   StagTable& stags, Hmc& hmc, trace::TraceLog& trace)
    : cfg_(cfg), dma_(dma), time_(time), cqs_(cqs), aeq_(aeq), trace_(trace), stags_(stags), hmc_(hmc) {}

uint16_t QpEngine::load_ctx(QpContext& qp) {
  uint64_t ctx[kQpCtxBytes / 8];
  if (!dma_.read(qp.host_ctx, ctx, kQpCtxBytes)) return CQP_MINOR_DMA_ERROR;
  qp.rq_shift = uint8_t(get(ctx[0], QPC_RQWQESIZE));
  qp.pd = uint32_t(get(ctx[QPC_PDIDX_QWORD], QPC_PDIDX) | get(ctx[0], QPC_PDIDXHI) << 16);
  qp.sq_base = ctx[QPC_SQADDR_QWORD];
  qp.rq_base = ctx[QPC_RQADDR_QWORD];
  qp.rq_wqes = (1u << (get(ctx[QPC_SIZES_QWORD], QPC_RQSIZE) + 2)) >> qp.rq_shift;
  qp.sq_quanta = 1u << (get(ctx[QPC_SIZES_QWORD], QPC_SQSIZE) + 2);
  qp.dest_qp = uint32_t(get(ctx[QPC_DESTQP_QWORD], QPC_DESTQP));
  qp.qkey = uint32_t(get(ctx[QPC_DESTQP_QWORD], QPC_QKEY));
  qp.send_cq = uint32_t(get(ctx[QPC_CQNUM_QWORD], QPC_TXCQNUM));
  qp.recv_cq = uint32_t(get(ctx[QPC_CQNUM_QWORD], QPC_RXCQNUM));
  qp.compl_ctx = ctx[QPC_QPCOMPCTX_QWORD];
  if (!cqs_.exists(qp.send_cq) || !cqs_.exists(qp.recv_cq)) return CQP_MINOR_NO_SUCH_OBJECT;
  if (qp.sq_quanta < kMaxQuanta || qp.rq_wqes == 0) return CQP_MINOR_BAD_SIZE;
  return 0;
}

uint16_t QpEngine::create(uint32_t qp_id, uint8_t type, uint64_t host_ctx) {
  if (qp_id >= cfg_.max_qp) return CQP_MINOR_BAD_ID;
  if (exists(qp_id)) return CQP_MINOR_ID_IN_USE;
  QpContext qp;
  qp.id = qp_id;
  qp.type = type;
  qp.host_ctx = host_ctx;
  if (uint16_t err = load_ctx(qp)) return err;
  qps_[qp_id] = qp;
  count_cq_users(qp, +1);
  return 0;
}

uint16_t QpEngine::modify(uint32_t qp_id, uint64_t host_ctx) {
  auto it = qps_.find(qp_id);
  if (it == qps_.end()) return CQP_MINOR_NO_SUCH_OBJECT;
  QpContext updated = it->second;
  updated.host_ctx = host_ctx;
  if (uint16_t err = load_ctx(updated)) return err;
  // The device's ring positions carry over, so the rings themselves may not change.
  const QpContext& live = it->second;
  if (updated.sq_base != live.sq_base || updated.rq_base != live.rq_base ||
      updated.sq_quanta != live.sq_quanta || updated.rq_wqes != live.rq_wqes ||
      updated.rq_shift != live.rq_shift)
    return CQP_MINOR_UNSUPPORTED;
  count_cq_users(live, -1);
  count_cq_users(updated, +1);
  it->second = updated;
  return 0;
}

uint16_t QpEngine::destroy(uint32_t qp_id) {
  auto it = qps_.find(qp_id);
  if (it == qps_.end()) return CQP_MINOR_NO_SUCH_OBJECT;
  count_cq_users(it->second, -1);
  qps_.erase(it);
  return 0;
}

void QpEngine::count_cq_users(const QpContext& qp, int delta) {
  for (const uint32_t cq : {qp.send_cq, qp.recv_cq}) {
    uint32_t& users = cq_users_[cq];
    users += delta;
    if (users == 0) cq_users_.erase(cq);
  }
}

QpEngine::Result QpEngine::process_sq(uint32_t qp_id) {
  auto it = qps_.find(qp_id);
  if (it == qps_.end()) {
    counters_.bad_doorbells++;
    trace_.event(time_.now_ps(), "bad_doorbell").num("qp", qp_id);
    return Result::done;
  }
  QpContext& qp = it->second;
  if (qp.in_error) return Result::done;  // its doorbells no longer start anything
  SqWindow window;
  for (;;) {
    if (!dma_.mastering()) return Result::done;  // quiesced by the host: nothing starts
    if (between_wqes_) between_wqes_();
    SqWqe wqe;
    switch (fetch_sq_wqe(qp, window, wqe)) {
      case Fetch::ready: break;
      case Fetch::empty: return Result::done;
      case Fetch::unreadable:  // the host refused the read: the QP is lost, as on a catastrophic error
        if (!dma_.mastering()) return Result::done;  // quiesced meanwhile
        counters_.wqe_fetch_errors++;
        enter_error(qp, FLUSH_FATAL_ERR);
        return Result::done;
    }
    const uint8_t op = wqe.op;
    Result r = Result::done;
    if (!wqe.fits) {
      r = fail(qp, FLUSH_LOC_QP_OP_ERR);
    } else if (op != SQ_NOP && int64_t(qp.requests) == qp.fault_at) {
      r = Result::failed;
      enter_error(qp, qp.fault_minor);
    } else if (op == SQ_NOP || op == SQ_INV_STAG || op == SQ_FAST_REG_NSMR || op == SQ_BIND_MW) {
      r = execute_local(qp, wqe.qwords, op);
    } else if (executable(op)) {
      r = execute(qp, wqe.qwords, op);
    } else {
      r = fail(qp, FLUSH_LOC_QP_OP_ERR);  // no such operation
    }
    if (r == Result::failed) return Result::done;  // flushed: nothing more runs
    if (r == Result::rnr) {
      counters_.rnr_stalls++;
      return r;
    }
    if (op != SQ_NOP) qp.requests++;
    counters_.wqes_executed++;
    // The window's quanta belong to the last pass once the head wraps.
    if (qp.sq_head.advance(qp.sq_quanta, std::min(wqe.quanta, qp.sq_quanta - qp.sq_head.idx)))
      window.count = 0;
  }
}

}  // namespace irdma_sim::device
