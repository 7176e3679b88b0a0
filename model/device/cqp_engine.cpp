#include "model/device/cqp_engine.h"

#include "model/device/descriptor_fields.h"

namespace irdma_sim::device {

using namespace regs;

namespace {

constexpr unsigned kWqeBytes = 64;
constexpr uint32_t kMaxCqSizeField = (1u << 21) - 1;  // CQSIZE is bits 20:0

}  // namespace

CqpEngine::CqpEngine(const DeviceConfig& cfg, DmaPort& dma, EngineTime& time, Hmc& hmc,
                     CqEngine& cqs, QpEngine& qps, StagTable& stags, CeqEngine& ceqs,
                     AeqEngine& aeq, trace::TraceLog& trace)
    : cfg_(cfg), dma_(dma), time_(time), hmc_(hmc), cqs_(cqs), qps_(qps), stags_(stags), ceqs_(ceqs),
      aeq_(aeq), trace_(trace) {}

void CqpEngine::fail(uint16_t major, uint16_t minor) {
  status_ = CCQPSTATUS_DONE | CCQPSTATUS_ERR;
  errcodes_ = uint32_t(major) << 16 | minor;
}

void CqpEngine::start(uint64_t host_ctx) {
  uint64_t ctx[8];
  if (!dma_.read(host_ctx, ctx, sizeof ctx)) return fail(CQP_MAJOR_ERROR, CQP_MINOR_DMA_ERROR);
  // SQ size is encoded as log2(size) - 1, for sizes 4 .. 2048.
  const uint64_t enc = get(ctx[0], CQPHC_SQSIZE);
  if (enc < 1 || enc > 10) return fail(CQP_MAJOR_ERROR, CQP_MINOR_BAD_SIZE);
  // A driver for another generation (HW major version: GEN_2 is 1, GEN_3 is 2).
  if (get(ctx[4], CQPHC_HW_MAJVER) != cfg_.generation - 1u) return fail(CQP_MAJOR_ERROR, CQP_MINOR_UNSUPPORTED);
  sq_size_ = 1u << (enc + 1);
  sq_base_ = ctx[1];
  cqp_ctx_ = ctx[3];
  tail_ = {};
  op_err_ = false;
  running_ = true;
  time_.catch_up();
  status_ = CCQPSTATUS_DONE;
  trace_.event(time_.now_ps(), "cqp_start").num("sq_size", sq_size_);
}

void CqpEngine::stop() {
  running_ = false;
  status_ = 0;
}

void CqpEngine::reset() {
  stop();
  sq_base_ = 0;
  sq_size_ = 0;
  cqp_ctx_ = 0;
  tail_ = {};
  errcodes_ = 0;
  op_err_ = false;
  wedged_ = false;
}

void CqpEngine::doorbell(uint32_t head) {
  if (wedged_ || !dma_.mastering()) return;  // a function the host quiesced takes nothing
  if (!running_ || head >= sq_size_) {
    op_err_ = true;
    return;
  }
  uint64_t wqe[kWqeBytes / 8];
  while (tail_.idx != head) {
    if (!dma_.read(sq_base_ + uint64_t(tail_.idx) * kWqeBytes, wqe, kWqeBytes) ||
        bit(wqe[3], CQP_WQE_VALID) != tail_.polarity) {
      // Rung for a WQE that is not there: the driver's bug, reported, not executed.
      op_err_ = true;
      errcodes_ = uint32_t(CQP_MAJOR_ERROR) << 16 | CQP_MINOR_BAD_OPCODE;
      counters_.errors++;
      trace_.event(time_.now_ps(), "cqp_error").num("index", tail_.idx);
      return;
    }
    if (cfg_.cqp_hang_after_ns && !counters_.hung && time_.now_ps() >= *cfg_.cqp_hang_after_ns * 1000) {
      wedged_ = true;
      counters_.hung = 1;
      trace_.event(time_.now_ps(), "cqp_hang").num("index", tail_.idx).num("opcode", get(wqe[3], CQP_WQE_OPCODE));
      return;
    }
    time_.cycles(cfg_.cycles.cqp_wqe);
    // The CCQ completes commands only once it exists; its own creation is seen in CQPTAIL.
    const bool ccq_before = cqs_.exists(0);
    const Outcome out = execute(wqe);
    counters_.commands++;
    if (out.major) counters_.errors++;
    cover_command(uint8_t(get(wqe[3], CQP_WQE_OPCODE)), out.major != 0);
    trace_.event(time_.now_ps(), "cqp_op")
        .num("index", tail_.idx)
        .num("opcode", get(wqe[3], CQP_WQE_OPCODE))
        .num("major", out.major)
        .num("minor", out.minor);
    if (!ccq_before && out.major) {
      // No CCQ to complete on: the error shows in CQPTAIL and CQPERRCODES.
      op_err_ = true;
      errcodes_ = uint32_t(out.major) << 16 | out.minor;
    }
    if (ccq_before) {
      CqeFields f;
      f.qp_ctx = cqp_ctx_;
      f.wqe_idx = uint16_t(tail_.idx);
      f.stag_or_src_qpn = out.op_ret;
      f.op = uint8_t(get(wqe[3], CQP_WQE_OPCODE));
      f.error = out.major != 0;
      f.major_err = out.major;
      f.minor_err = out.minor;
      cqs_.post(0, f);
    }
    // CQPTAIL is host-visible: it moves at the engine's time, not ahead of it.
    time_.catch_up();
    tail_.advance(sq_size_);
  }
}

void CqpEngine::cover_command(uint8_t op, bool error) {
  static constexpr uint8_t kCovered[] = {OP_CREATE_QP,          OP_MODIFY_QP,    OP_DESTROY_QP,    OP_CREATE_CQ,
                                         OP_MODIFY_CQ,          OP_DESTROY_CQ,   OP_ALLOC_STAG,    OP_DEALLOC_STAG,
                                         OP_QUERY_RDMA_FEATURES, OP_CREATE_CEQ,  OP_DESTROY_CEQ,   OP_CREATE_AEQ,
                                         OP_DESTROY_AEQ,        OP_UPDATE_PE_SDS, OP_QUERY_FPM_VAL, OP_COMMIT_FPM_VAL,
                                         OP_FLUSH_WQES};
  unsigned command = 0;
  while (command < std::size(kCovered) && kCovered[command] != op) command++;  // past the end: "other"
  trace_.coverage().hit(trace::Cover::cqp_command, {command, error ? 1u : 0u});
}

// A command's completion from the minor code an engine returned (0: success).
CqpEngine::Outcome CqpEngine::outcome(uint16_t minor) {
  return {minor ? CQP_MAJOR_ERROR : uint16_t(0), minor, 0};
}

CqpEngine::Outcome CqpEngine::execute(const uint64_t* wqe) {
  const uint8_t op = uint8_t(get(wqe[3], CQP_WQE_OPCODE));
  switch (op) {
    case OP_CREATE_CQ: return create_cq(wqe);
    case OP_DESTROY_CQ: return destroy_cq(wqe);
    case OP_MODIFY_CQ: return modify_cq(wqe);
    case OP_CREATE_QP:
    case OP_MODIFY_QP:
    case OP_DESTROY_QP: return qp_command(op, wqe);
    case OP_FLUSH_WQES: return flush_wqes(wqe);
    case OP_CREATE_CEQ:
      return outcome(ceqs_.create(uint32_t(get(wqe[3], CQP_CEQ_CEQID)), wqe[4],
                                  uint32_t(get(wqe[2], CQP_CEQ_CEQSIZE))));
    case OP_DESTROY_CEQ: return outcome(ceqs_.destroy(uint32_t(get(wqe[3], CQP_CEQ_CEQID))));
    // This model's AEQ WQEs follow CEQ_CREATE's: entries in qword2, the ring in qword4.
    case OP_CREATE_AEQ: return outcome(aeq_.create(wqe[4], uint32_t(get(wqe[2], CQP_AEQ_AEQSIZE))));
    case OP_DESTROY_AEQ: return outcome(aeq_.destroy());
    case OP_ALLOC_STAG:
    case OP_DEALLOC_STAG: return stag_command(op, wqe);
    case OP_REG_MR: return reg_mr(wqe);
    case OP_QUERY_FPM_VAL: return outcome(hmc_.query_fpm(wqe[4]));
    case OP_COMMIT_FPM_VAL: return outcome(hmc_.commit_fpm(wqe[4], uint32_t(get(wqe[3], CQP_WQE_BUFSIZE))));
    case OP_UPDATE_PE_SDS: return outcome(hmc_.update_sds(wqe));
    case OP_QUERY_RDMA_FEATURES:
      return outcome(hmc_.query_features(wqe[4], uint32_t(get(wqe[3], CQP_WQE_BUFSIZE))));
    default: return {CQP_MAJOR_ERROR, CQP_MINOR_BAD_OPCODE, 0};
  }
}

CqpEngine::Outcome CqpEngine::create_cq(const uint64_t* wqe) {
  const uint32_t id = uint32_t(get(wqe[3], CQP_CQ_CQID));
  if (id >= hmc_.committed(Hmc::CQ)) return {CQP_MAJOR_ERROR, CQP_MINOR_BAD_ID, 0};
  if (cqs_.exists(id)) return {CQP_MAJOR_ERROR, CQP_MINOR_ID_IN_USE, 0};
  if (bit(wqe[3], CQP_CQ_VIRTMAP)) return {CQP_MAJOR_ERROR, CQP_MINOR_UNSUPPORTED, 0};  // PBL rings
  CqContext cq;
  cq.id = id;
  const uint64_t size = wqe[0];
  if (size < 2 || size > kMaxCqSizeField) return {CQP_MAJOR_ERROR, CQP_MINOR_BAD_SIZE, 0};
  cq.size = uint32_t(size);
  cq.ctx = get(wqe[1], CQP_CQ_CQCTX);
  cq.shadow_read_threshold = uint32_t(get(wqe[2], CQP_CQ_SHADOW_READ_THRESHOLD));
  cq.base = wqe[4];
  cq.shadow = wqe[5];
  cq.ceq_id_valid = bit(wqe[3], CQP_CQ_CEQIDVALID);
  cq.ceq_id = cq.ceq_id_valid ? uint32_t(get(wqe[3], CQP_CQ_CEQID)) : 0;
  if (cq.ceq_id_valid && cq.ceq_id >= cfg_.num_ceqs) return {CQP_MAJOR_ERROR, CQP_MINOR_BAD_ID, 0};
  cq.check_overflow = bit(wqe[3], CQP_CQ_CHKOVERFLOW);
  cq.ceqe_mask = bit(wqe[3], CQP_CQ_ENCEQEMASK);
  cq.cqe_64byte = bit(wqe[3], CQP_CQ_AVOIDMEMCNFLCT);
  if (cq.cqe_64byte && !cfg_.cqe_64byte) return {CQP_MAJOR_ERROR, CQP_MINOR_UNSUPPORTED, 0};
  cqs_.add(cq);
  return {};
}

CqpEngine::Outcome CqpEngine::qp_command(uint8_t op, const uint64_t* wqe) {
  const uint32_t id = uint32_t(get(wqe[3], CQP_QP_QPID));
  uint16_t minor = 0;
  if (op == OP_CREATE_QP && id >= hmc_.committed(Hmc::QP))
    minor = CQP_MINOR_BAD_ID;
  else if (op == OP_CREATE_QP)
    minor = qps_.create(id, uint8_t(get(wqe[3], CQP_QP_QPTYPE)), wqe[2]);
  else if (op == OP_MODIFY_QP)
    minor = qps_.modify(id, wqe[2]);
  else
    minor = qps_.destroy(id);
  return outcome(minor);
}

// FLUSH_WQES (spec F.7): the QP moves to error and the queues named flush, their first
// WQE with the minor code given (the driver's own codes) or a general flush. Flush CQEs
// always carry major 1; the majors in qword2 are not used.
CqpEngine::Outcome CqpEngine::flush_wqes(const uint64_t* wqe) {
  const uint32_t id = uint32_t(get(wqe[3], CQP_QP_QPID));
  const bool user_codes = bit(wqe[3], CQP_FWQE_USERFLCODE);
  const uint16_t sq_minor = user_codes ? uint16_t(get(wqe[2], CQP_FWQE_SQMNERR)) : FLUSH_GENERAL_ERR;
  const uint16_t rq_minor = user_codes ? uint16_t(get(wqe[2], CQP_FWQE_RQMNERR)) : FLUSH_GENERAL_ERR;
  const uint16_t minor =
      qps_.flush(id, bit(wqe[3], CQP_FWQE_FLUSHSQ), bit(wqe[3], CQP_FWQE_FLUSHRQ), sq_minor, rq_minor);
  return outcome(minor);
}

// ALLOC_STAG makes a region (MR, its most bytes in STAGLEN) or a window (MWTYPE: type 1)
// at an index; DEALLOC_STAG frees one of the kind the MR bit names.
CqpEngine::Outcome CqpEngine::stag_command(uint8_t op, const uint64_t* wqe) {
  const uint32_t index = uint32_t(get(wqe[2], CQP_STAG_IDX));
  const bool window = !bit(wqe[3], CQP_STAG_MR);
  if (op == OP_ALLOC_STAG && index >= hmc_.committed(Hmc::MR)) return outcome(CQP_MINOR_BAD_ID);
  const uint16_t minor =
      op == OP_ALLOC_STAG
          ? stags_.alloc(index, window, bit(wqe[3], CQP_STAG_MWTYPE), get(wqe[1], CQP_STAG_STAGLEN),
                         uint32_t(get(wqe[1], CQP_STAG_PDID)))
          : stags_.dealloc(index, window);
  return outcome(minor);
}

// REG_MR: a region allocated and registered at once, VA-based over 4 KiB pages: one
// DMA-contiguous run from qword4, or (LPBLSIZE 1) a page list in the HMC's PBLE object.
CqpEngine::Outcome CqpEngine::reg_mr(const uint64_t* wqe) {
  const uint32_t index = uint32_t(get(wqe[2], CQP_STAG_IDX));
  if (index >= hmc_.committed(Hmc::MR)) return outcome(CQP_MINOR_BAD_ID);
  const uint64_t len = get(wqe[1], CQP_STAG_STAGLEN);
  const uint64_t lpbl = get(wqe[3], CQP_STAG_LPBLSIZE);
  if (!bit(wqe[3], CQP_STAG_VABASEDTO) || get(wqe[3], CQP_STAG_HPAGESIZE) != 0 || lpbl > 1 || len == 0)
    return outcome(CQP_MINOR_UNSUPPORTED);
  const StagGrant g{index << 8 | uint32_t(get(wqe[2], CQP_STAG_KEY)), wqe[0], len,
                    uint8_t(get(wqe[3], CQP_STAG_ARIGHTS)), false};
  // A contiguous run is its first page; a list is read whole, once it is known to fit.
  std::vector<uint64_t> pages;
  if (lpbl == 0) {
    pages.push_back(wqe[4] & ~(StagTable::kPage - 1));
  } else {
    const uint64_t npages = StagTable::pages_spanned(g.va, g.len);
    const uint64_t first = get(wqe[6], CQP_STAG_FIRSTPMPBLIDX);
    if (npages > hmc_.committed(Hmc::PBLE) || first > hmc_.committed(Hmc::PBLE) - npages)
      return outcome(CQP_MINOR_BAD_ID);
    pages.resize(npages);
    if (!hmc_.read_pbles(first, npages, pages.data())) return outcome(CQP_MINOR_BAD_ID);
  }
  if (const uint16_t minor = stags_.alloc(index, false, false, len, uint32_t(get(wqe[1], CQP_STAG_PDID))))
    return outcome(minor);
  if (stags_.fast_register(g, std::move(pages), lpbl == 0)) {
    stags_.dealloc(index, false);
    return outcome(CQP_MINOR_UNSUPPORTED);
  }
  return outcome(0);
}

// MODIFY_CQ with CQRESIZE (spec F.4): the CQ writes on into a new ring from its start,
// with pass polarity 1; the old ring's CQEs stay where they are. CHKOVERFLOW and the CEQE
// mask come with the command (the kernel's resize clears CHKOVERFLOW). SW_CQ_SELECT, the
// count of retired rings the driver drained, is not needed by this device: it never looks
// at a retired ring again.
CqpEngine::Outcome CqpEngine::modify_cq(const uint64_t* wqe) {
  const uint32_t id = uint32_t(get(wqe[3], CQP_CQ_CQID));
  const CqContext* cq = cqs_.find(id);
  if (!cq) return outcome(CQP_MINOR_NO_SUCH_OBJECT);
  if (!bit(wqe[3], CQP_CQ_CQRESIZE) || bit(wqe[3], CQP_CQ_VIRTMAP) ||
      bit(wqe[3], CQP_CQ_AVOIDMEMCNFLCT) != cq->cqe_64byte)
    return outcome(CQP_MINOR_UNSUPPORTED);  // only resizes, of physically contiguous rings
  if (wqe[0] < 2 || wqe[0] > kMaxCqSizeField) return outcome(CQP_MINOR_BAD_SIZE);
  cqs_.resize(id, wqe[4], uint32_t(wqe[0]), uint32_t(get(wqe[2], CQP_CQ_SHADOW_READ_THRESHOLD)),
              bit(wqe[3], CQP_CQ_CHKOVERFLOW), bit(wqe[3], CQP_CQ_ENCEQEMASK));
  return {};
}

CqpEngine::Outcome CqpEngine::destroy_cq(const uint64_t* wqe) {
  const uint32_t id = uint32_t(get(wqe[3], CQP_CQ_CQID));
  if (!cqs_.exists(id)) return {CQP_MAJOR_ERROR, CQP_MINOR_NO_SUCH_OBJECT, 0};
  if (qps_.cq_in_use(id)) return {CQP_MAJOR_ERROR, CQP_MINOR_IN_USE, 0};
  cqs_.remove(id);
  return {};
}

}  // namespace irdma_sim::device
