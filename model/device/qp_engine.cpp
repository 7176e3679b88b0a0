#include "model/device/qp_engine.h"

#include <algorithm>

#include "model/device/descriptor_fields.h"

namespace irdma_sim::device {

using namespace regs;

namespace {

constexpr unsigned kQuantum = 32;
constexpr unsigned kMaxQuanta = 8;
constexpr uint32_t kFetchQuanta = 16;  // 512 bytes: one max read request
constexpr uint64_t kMaxMessage = 1ull << 31;  // RoCE's largest message
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

QpEngine::QpEngine(const DeviceConfig& cfg, DmaPort& dma, EngineTime& time, CqEngine& cqs,
                   StagTable& stags, Hmc& hmc, trace::TraceLog& trace)
    : cfg_(cfg), dma_(dma), time_(time), cqs_(cqs), trace_(trace), stags_(stags), hmc_(hmc) {}

uint16_t QpEngine::load_ctx(QpContext& qp) {
  uint64_t ctx[kQpCtxBytes / 8];
  if (!dma_.read(qp.host_ctx, ctx, kQpCtxBytes)) return CQP_MINOR_DMA_ERROR;
  qp.rq_shift = uint8_t(get(ctx[0], QPC_RQWQESIZE));
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

// Fragment slot i sits at qwords {0,1} (i = 0) or {4 + 2(i-1), 5 + 2(i-1)}.
QpEngine::Fragments QpEngine::sq_fragments(const uint64_t* wqe) {
  return fragments(wqe, bit(wqe[3], SQ_WQE_IMMDATAFLAG) ? 1 : 0, unsigned(get(wqe[3], WQE_ADDFRAGCNT)) + 1);
}

QpEngine::Fragments QpEngine::fragments(const uint64_t* wqe, unsigned first_slot, unsigned slots) {
  Fragments out;
  for (unsigned i = first_slot; i < slots && i < 16; i++) {
    const uint64_t* s = i == 0 ? wqe : wqe + 4 + 2 * (i - 1);
    const uint32_t len = uint32_t(get(s[1], WQE_FRAG_LEN));
    if (len) out.at[out.count++] = {s[0], len};
  }
  return out;
}

void QpEngine::complete_sq(const QpContext& qp, uint8_t op, uint16_t major, uint16_t minor) {
  CqeFields f;
  f.qp_ctx = qp.compl_ctx;
  f.qp_id = qp.id;
  f.wqe_idx = uint16_t(qp.sq_head.idx);
  f.op = op;
  f.sq = true;
  if (qp.type == QP_TYPE_ROCE_UD) {
    // The driver reports any UD completion's source QPN and IP version; a send names
    // its own QP (this model's choice: the spec says nothing of UD send CQEs).
    f.stag_or_src_qpn = qp.id;
    f.stag_or_ipv4 = cfg_.ud_ipv4;
  }
  f.error = major != 0;
  f.major_err = major;
  f.minor_err = minor;
  cqs_.post(qp.send_cq, f);
}

// What a receive's CQE says the message was: GEN_2 reports its (last) BTH opcode, GEN_3
// the sender's SQ opcode.
uint8_t QpEngine::receive_opcode(uint8_t sq_op, bool imm) const {
  if (cfg_.generation >= 3) return sq_op;
  if (sq_op == SQ_RDMA_WRITE || sq_op == SQ_RDMA_WRITE_SOL) return BTH_RDMA_WRITE_ONLY_WITH_IMMEDIATE;
  if (sq_op == SQ_SEND_INV || sq_op == SQ_SEND_SOL_INV) return BTH_SEND_ONLY_WITH_INVALIDATE;
  return imm ? BTH_SEND_ONLY_WITH_IMMEDIATE : BTH_SEND_ONLY;
}

// The peer's next receive, into `dst`.
QpEngine::Receive QpEngine::next_receive(QpContext& peer, Fragments& dst) {
  const uint32_t rwqe_bytes = kQuantum << peer.rq_shift;
  uint64_t rwqe[(kQuantum << 3) / 8];
  if (!dma_.read(peer.rq_base + uint64_t(peer.rq_head.idx) * rwqe_bytes, rwqe, rwqe_bytes))
    return Receive::unreadable;
  if (bit(rwqe[3], WQE_VALID) != peer.rq_head.polarity) return Receive::none;
  time_.cycles(cfg_.cycles.wqe_decode);
  // An RQ WQE of 2^rq_shift quanta holds at most 1 + 2 (2^rq_shift - 1) fragment slots.
  const unsigned rq_slot_limit = 1 + 2 * ((1u << peer.rq_shift) - 1);
  unsigned rq_slots = unsigned(get(rwqe[3], WQE_ADDFRAGCNT)) + 1;
  if (rq_slots > rq_slot_limit) {
    counters_.wqe_errors++;
    rq_slots = rq_slot_limit;
  }
  dst = fragments(rwqe, 0, rq_slots);
  return Receive::posted;
}

// Completes the receive at the peer's RQ head and consumes it.
void QpEngine::complete_rq(QpContext& peer, CqeFields& rq) {
  rq.qp_ctx = peer.compl_ctx;
  rq.qp_id = peer.id;
  rq.wqe_idx = uint16_t(peer.rq_head.idx << peer.rq_shift);
  cqs_.post(peer.recv_cq, rq);
  peer.rq_head.advance(peer.rq_wqes);
}

QpEngine::Result QpEngine::execute(QpContext& qp, const uint64_t* wqe, uint8_t op) {
  const bool send = op == SQ_SEND || op == SQ_SEND_SOL || op == SQ_SEND_INV || op == SQ_SEND_SOL_INV;
  const bool write = op == SQ_RDMA_WRITE || op == SQ_RDMA_WRITE_SOL;
  const bool read = op == SQ_RDMA_READ || op == SQ_RDMA_READ_INV_STAG;
  const bool imm = bit(wqe[3], SQ_WQE_IMMDATAFLAG) && !read;
  const bool signaled = bit(wqe[3], SQ_WQE_SIGCOMPL);
  if (qp.type == QP_TYPE_ROCE_UD) return execute_ud(qp, wqe, op);
  if (op == SQ_ATOMIC_FETCH_ADD || op == SQ_ATOMIC_COMPARE_SWAP) return execute_atomic(qp, wqe, op);
  auto peer_it = qps_.find(qp.dest_qp);
  // Nobody answers a QP that is gone or in error: the requester retries until it gives up.
  if (peer_it == qps_.end() || peer_it->second.in_error) {
    enter_error(qp, FLUSH_RETRY_EXC_ERR);
    return Result::failed;
  }
  QpContext& peer = peer_it->second;

  // A SEND, or a WRITE with immediate data, needs a receive at the peer before anything
  // moves (RNR otherwise); a SEND's data lands in that receive's buffers.
  Fragments receive;
  const bool consumes_receive = send || (write && imm);
  if (consumes_receive) {
    switch (next_receive(peer, receive)) {
      case Receive::posted: break;
      case Receive::none: return Result::rnr;
      case Receive::unreadable:  // the responder cannot read its own RQ
        enter_error(peer, true, true, FLUSH_GENERAL_ERR, FLUSH_LOC_QP_OP_ERR);
        return fail(qp, FLUSH_REM_OP_ERR);
    }
  }
  const Fragments local = sq_fragments(wqe);
  const uint64_t total = local.bytes();
  const uint64_t capacity = send ? receive.bytes() : total;
  time_.cycles(cfg_.cycles.execute);

  if (send && total > capacity) {  // the receive is too small for it
    enter_error(peer, true, true, FLUSH_GENERAL_ERR, FLUSH_LOC_LEN_ERR);
    return fail(qp, FLUSH_REM_INV_REQ_ERR);
  }
  if (total > kMaxMessage) return fail(qp, FLUSH_LOC_LEN_ERR);  // longer than RoCE allows
  if (send) {
    remote_.assign(receive.begin(), receive.end());
  } else if (uint16_t err = remote_extents(uint32_t(get(wqe[3], SQ_WQE_REMSTAG)), wqe[2], total,
                                           read ? RemoteAccess::read : RemoteAccess::write)) {
    // The responder refuses the access (NAK): the requester's QP moves to error.
    enter_error(qp, err);
    return Result::failed;
  }
  const uint64_t moved = read ? move_payload(remote_.data(), remote_.size(), local.begin(), local.count)
                              : move_payload(local.begin(), local.count, remote_.data(), remote_.size());
  // A READ's remote buffer, or the sender's own buffer, could not be read. A torn message
  // is never completed at the responder: its receive stays posted.
  if (moved < total) return fail(qp, read ? FLUSH_REM_ACCESS_ERR : FLUSH_PROT_ERR);
  counters_.bytes_moved += total;
  counters_.messages++;
  if (consumes_receive) {
    CqeFields rq;
    rq.solicited = op == SQ_SEND_SOL || op == SQ_SEND_SOL_INV || op == SQ_RDMA_WRITE_SOL;
    rq.op = receive_opcode(op, imm);
    rq.payload_len = uint32_t(total);
    if (op == SQ_SEND_INV || op == SQ_SEND_SOL_INV) {  // the STag rides in REMSTAG
      rq.stag_or_ipv4 = true;
      rq.stag_or_src_qpn = uint32_t(get(wqe[3], SQ_WQE_REMSTAG));
      stags_.invalidate(rq.stag_or_src_qpn);  // a key it cannot invalidate is not reported
    }
    if (imm) {
      rq.extended = true;
      rq.imm_valid = true;
      rq.imm_data = uint32_t(wqe[0]);
    }
    complete_rq(peer, rq);
  }
  // A READ with invalidate frees the sink's STag (its first fragment's) once data landed.
  if (op == SQ_RDMA_READ_INV_STAG) {
    if (uint16_t err = stags_.invalidate(uint32_t(get(wqe[1], WQE_FRAG_STAG)))) {
      enter_error(qp, err);
      return Result::failed;
    }
  }
  if (signaled) complete_sq(qp, op, 0, 0);
  return Result::done;
}

// A work request the device cannot carry out moves its QP to error: its queues flush, the
// first WQE with the error's code (IB semantics for a completion in error).
QpEngine::Result QpEngine::fail(QpContext& qp, uint16_t minor) {
  counters_.wqe_errors++;
  enter_error(qp, minor);
  return Result::failed;
}

uint16_t QpEngine::remote_extents(uint32_t stag, uint64_t va, uint64_t len, RemoteAccess access) {
  remote_.clear();
  return stags_.translate(stag, va, len, access, remote_);
}

QpEngine::Result QpEngine::execute_local(QpContext& qp, const uint64_t* wqe, uint8_t op) {
  uint16_t err = 0;
  if (op == SQ_INV_STAG) {
    err = stags_.invalidate(uint32_t(get(wqe[1], SQ_WQE_LOCSTAG)));
  } else if (op == SQ_FAST_REG_NSMR) {
    err = fast_register(wqe);
  } else if (op == SQ_BIND_MW) {
    const StagGrant window{uint32_t(get(wqe[1], SQ_WQE_MWSTAG)), wqe[0], wqe[2],
                           uint8_t(get(wqe[3], SQ_WQE_STAGRIGHTS)), bit(wqe[3], SQ_WQE_REMOTE_ATOMICS_EN)};
    err = stags_.bind(window, uint32_t(get(wqe[1], SQ_WQE_PARENTMRSTAG)), bit(wqe[3], SQ_WQE_MEMWINDOWTYPE));
  }
  if (err) {
    enter_error(qp, err);
    return Result::failed;
  }
  if (bit(wqe[3], SQ_WQE_SIGCOMPL)) complete_sq(qp, op, 0, 0);
  return Result::done;
}

// FAST_REG_NSMR: one page's address in qword1, or (LPBLSIZE 1) a list in the HMC's PBLE
// object from FIRSTPMPBLIDX on.
uint16_t QpEngine::fast_register(const uint64_t* wqe) {
  const StagGrant g{uint32_t(get(wqe[3], SQ_WQE_STAG)), wqe[0], get(wqe[2], SQ_WQE_STAGLEN),
                    uint8_t(get(wqe[3], SQ_WQE_STAGRIGHTS)), bit(wqe[3], SQ_WQE_REMOTE_ATOMICS_EN)};
  const uint64_t npages = StagTable::pages_spanned(g.va, g.len);
  if (!bit(wqe[3], SQ_WQE_VABASEDTO) || get(wqe[3], SQ_WQE_HPAGESIZE) != 0) return FLUSH_PROT_ERR;  // 4 KiB pages
  std::vector<uint64_t> pages;
  if (get(wqe[3], SQ_WQE_LPBLSIZE) == 0) {
    if (npages > 1) return FLUSH_PROT_ERR;
    pages.push_back(wqe[1] & ~(StagTable::kPage - 1));
  } else {
    const uint64_t first = get(wqe[1], SQ_WQE_FIRSTPMPBLIDXHI) << SQ_WQE_FIRSTPMPBLIDXLO.width() |
                           get(wqe[2], SQ_WQE_FIRSTPMPBLIDXLO);
    if (first + npages > hmc_.committed(Hmc::PBLE)) return FLUSH_PROT_ERR;  // before sizing by the WQE
    pages.resize(npages);
    if (!hmc_.read_pbles(first, npages, pages.data())) return FLUSH_PROT_ERR;
  }
  return stags_.fast_register(g, std::move(pages));
}

// An atomic on 8 remote bytes, the original value returned into the local buffer. GEN_3
// devices have them (FEATURE_ATOMIC_OPS); the engine runs one WQE at a time, so the read
// and write back cannot interleave with another access of the device's.
QpEngine::Result QpEngine::execute_atomic(QpContext& qp, const uint64_t* wqe, uint8_t op) {
  time_.cycles(cfg_.cycles.execute);
  if (cfg_.generation < 3) return fail(qp, FLUSH_LOC_QP_OP_ERR);
  if (wqe[2] % 8 != 0) return fail(qp, FLUSH_REM_INV_REQ_ERR);  // atomics need natural alignment
  if (uint16_t err = remote_extents(uint32_t(get(wqe[3], SQ_WQE_REMSTAG)), wqe[2], 8, RemoteAccess::atomic)) {
    enter_error(qp, err);
    return Result::failed;
  }
  const uint64_t remote = remote_[0].addr;
  uint64_t original = 0;
  if (!dma_.read(remote, &original, 8)) return fail(qp, FLUSH_REM_ACCESS_ERR);
  const uint64_t updated = op == SQ_ATOMIC_FETCH_ADD ? original + wqe[4]
                           : original == wqe[5]      ? wqe[4]
                                                     : original;
  if (updated != original) dma_.write(remote, &updated, 8);
  dma_.write(wqe[0], &original, 8);
  counters_.messages++;
  counters_.bytes_moved += 8;
  if (bit(wqe[3], SQ_WQE_SIGCOMPL)) complete_sq(qp, op, 0, 0);
  return Result::done;
}

// A datagram: delivered to the QP and QKEY qword2 names when it has a receive posted there,
// dropped otherwise (UD has no RNR and no acknowledgement); the sender completes either way.
QpEngine::Result QpEngine::execute_ud(QpContext& qp, const uint64_t* wqe, uint8_t op) {
  const bool imm = bit(wqe[3], SQ_WQE_IMMDATAFLAG);
  if (op != SQ_SEND && op != SQ_SEND_SOL) return fail(qp, FLUSH_LOC_QP_OP_ERR);
  const Fragments local = sq_fragments(wqe);
  const uint64_t total = local.bytes();
  time_.cycles(cfg_.cycles.execute);

  auto peer_it = qps_.find(uint32_t(get(wqe[2], SQ_WQE_DESTQPN)));
  Fragments receive;
  bool delivered = false;
  if (peer_it != qps_.end() && peer_it->second.type == QP_TYPE_ROCE_UD && !peer_it->second.in_error &&
      peer_it->second.qkey == uint32_t(get(wqe[2], SQ_WQE_DESTQKEY)) &&
      next_receive(peer_it->second, receive) == Receive::posted) {
    QpContext& peer = peer_it->second;
    const uint64_t capacity = receive.bytes();
    CqeFields rq;
    rq.op = receive_opcode(op, imm);
    rq.solicited = op == SQ_SEND_SOL;
    rq.stag_or_src_qpn = qp.id;
    rq.stag_or_ipv4 = cfg_.ud_ipv4;
    if (total > capacity) {
      rq.error = true;
      rq.major_err = MSG_ERROR_MAJOR;
      rq.minor_err = FLUSH_LOC_LEN_ERR;
    } else if (move_payload(local.begin(), local.count, receive.begin(), receive.count) == total) {
      // No GRH is placed in the buffer: the drivers read none (a model choice).
      rq.payload_len = uint32_t(total);
      rq.extended = true;
      rq.smac_valid = true;
      rq.ud_smac = cfg_.mac;
      rq.vlan_valid = cfg_.ud_vlan_tci != 0;
      rq.ud_vlan = cfg_.ud_vlan_tci;
      rq.imm_valid = imm;
      rq.imm_data = imm ? uint32_t(wqe[0]) : 0;
      counters_.bytes_moved += total;
      counters_.messages++;
    } else {
      return fail(qp, FLUSH_PROT_ERR);  // the sender's buffer could not be read
    }
    complete_rq(peer, rq);
    delivered = true;
  }
  if (!delivered) counters_.ud_dropped++;
  if (bit(wqe[3], SQ_WQE_SIGCOMPL)) complete_sq(qp, op, 0, 0);
  return Result::done;
}

bool QpEngine::inject_fault(uint32_t qp_id, uint64_t nth, uint16_t minor) {
  auto it = qps_.find(qp_id);
  if (it == qps_.end() || nth < it->second.requests) return false;
  it->second.fault_at = int64_t(nth);
  it->second.fault_minor = minor;
  return true;
}

uint16_t QpEngine::flush(uint32_t qp_id, bool sq, bool rq, uint16_t sq_minor, uint16_t rq_minor) {
  auto it = qps_.find(qp_id);
  if (it == qps_.end()) return CQP_MINOR_NO_SUCH_OBJECT;
  enter_error(it->second, sq, rq, sq_minor, rq_minor);
  return 0;
}

void QpEngine::enter_error(QpContext& qp, bool sq, bool rq, uint16_t sq_minor, uint16_t rq_minor) {
  if (!qp.in_error) counters_.qps_in_error++;
  qp.in_error = true;
  trace_.event(time_.now_ps(), "qp_error").num("qp", qp.id).num("sq_minor", sq_minor).num("rq_minor", rq_minor);
  if (sq) flush_sq(qp, sq_minor);
  if (rq) flush_rq(qp, rq_minor);
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
  cqs_.post(sq ? qp.send_cq : qp.recv_cq, f);
  counters_.flush_cqes++;
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
    const unsigned quanta = 1 + (unsigned(get(hdr[3], WQE_ADDFRAGCNT)) + 1) / 2;
    qp.sq_head.advance(qp.sq_quanta, std::min(quanta, qp.sq_quanta - qp.sq_head.idx));
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

// Copies the message through a bounce buffer of one chunk, so no message size, however
// large or corrupt, makes the device allocate it whole. Returns the bytes moved.
uint64_t QpEngine::move_payload(const Extent* src, size_t src_n, const Extent* dst, size_t dst_n) {
  uint64_t moved = 0;
  size_t si = 0, di = 0;
  uint64_t s_off = 0, d_off = 0;
  while (si < src_n && di < dst_n) {
    const uint32_t n = uint32_t(std::min({uint64_t(kChunk), src[si].len - s_off, dst[di].len - d_off}));
    if (!dma_.read(src[si].addr + s_off, bounce_.data(), n)) return moved;
    dma_.write(dst[di].addr + d_off, bounce_.data(), n);
    moved += n;
    if ((s_off += n) == src[si].len) {
      si++;
      s_off = 0;
    }
    if ((d_off += n) == dst[di].len) {
      di++;
      d_off = 0;
    }
  }
  return moved;
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
  // SQ WQEs are fetched up to a max read request at a time; no WQE crosses the ring's end.
  uint64_t fetched[kFetchQuanta * kQuantum / 8];
  uint32_t first = 0, count = 0;  // fetched quanta [first, first + count)
  const auto fetch = [&](uint32_t from) {
    first = from;
    count = std::min(kFetchQuanta, qp.sq_quanta - from);
    return dma_.read(qp.sq_base + uint64_t(from) * kQuantum, fetched, count * kQuantum);
  };
  for (;;) {
    if (between_wqes_) between_wqes_();
    const uint32_t head = qp.sq_head.idx;
    if ((head < first || head >= first + count) && !fetch(head)) {
      counters_.wqe_errors++;
      return Result::done;
    }
    const uint64_t* wqe = fetched + size_t(head - first) * 4;
    if (bit(wqe[3], WQE_VALID) != qp.sq_head.polarity) return Result::done;
    time_.cycles(cfg_.cycles.wqe_decode);
    const uint8_t op = uint8_t(get(wqe[3], SQ_WQE_OPCODE));
    const unsigned quanta = 1 + (unsigned(get(wqe[3], WQE_ADDFRAGCNT)) + 1) / 2;
    const bool fits = quanta <= kMaxQuanta && head + quanta <= qp.sq_quanta;
    // A WQE whose tail was not fetched yet is fetched again from its start.
    if (fits && head + quanta > first + count) {
      if (!fetch(head)) {
        counters_.wqe_errors++;
        return Result::done;
      }
      wqe = fetched;
    }
    Result r = Result::done;
    if (!fits) {
      r = fail(qp, FLUSH_LOC_QP_OP_ERR);
    } else if (op != SQ_NOP && int64_t(qp.requests) == qp.fault_at) {
      r = Result::failed;
      enter_error(qp, qp.fault_minor);
    } else if (op == SQ_NOP || op == SQ_INV_STAG || op == SQ_FAST_REG_NSMR || op == SQ_BIND_MW) {
      r = execute_local(qp, wqe, op);
    } else if (executable(op)) {
      r = execute(qp, wqe, op);
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
    // The fetched quanta belong to the last pass once the head wraps.
    if (qp.sq_head.advance(qp.sq_quanta, std::min(quanta, qp.sq_quanta - qp.sq_head.idx))) count = 0;
  }
}

}  // namespace irdma_sim::device
