// Execution: RC SENDs, RDMA WRITEs and READs against the peer QP, UD datagrams and
// atomics; payloads moved through one bounce buffer; the completions each one posts.
#include "model/device/qp_engine.h"

#include <algorithm>
#include <array>

#include "model/device/descriptor_fields.h"

namespace irdma_sim::device {

using namespace regs;

namespace {

constexpr uint64_t kMaxMessage = 1ull << 31;  // RoCE's largest message
constexpr uint32_t kGrhBytes = 40;
// What a RoCEv2 UD packet carries after its IP header besides the payload: UDP, BTH, DETH,
// ICRC.
constexpr uint32_t kUdOverhead = 8 + 12 + 8 + 4;

// The GRH a RoCEv2 UD receive starts with: an IPv6 header, or 20 bytes of zeros and an IPv4
// header. Loopback: the packet came from this port, its link-local GID (from the MAC) on
// both sides; this port has no IPv4 address, so IPv4's are zero.
std::array<uint8_t, kGrhBytes> ud_grh(uint64_t mac, bool ipv4, uint64_t payload) {
  std::array<uint8_t, kGrhBytes> g{};
  if (ipv4) {
    uint8_t* ip = g.data() + 20;
    const uint32_t total = uint32_t(20 + kUdOverhead + payload);
    ip[0] = 0x45;
    ip[2] = uint8_t(total >> 8);
    ip[3] = uint8_t(total);
    ip[6] = 0x40;  // don't fragment
    ip[8] = 64;    // TTL
    ip[9] = 17;    // UDP
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) sum += uint32_t(ip[i]) << 8 | ip[i + 1];
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    ip[10] = uint8_t(~sum >> 8);
    ip[11] = uint8_t(~sum);
    return g;
  }
  const uint32_t len = uint32_t(kUdOverhead + payload);
  g[0] = 0x60;
  g[4] = uint8_t(len >> 8);
  g[5] = uint8_t(len);
  g[6] = 17;  // UDP
  g[7] = 64;  // hop limit
  // fe80::/64, then the MAC as EUI-64 (universal/local bit flipped, FF:FE in the middle).
  uint8_t gid[16] = {0xfe, 0x80};
  const uint8_t m[6] = {uint8_t(mac >> 40), uint8_t(mac >> 32), uint8_t(mac >> 24),
                        uint8_t(mac >> 16), uint8_t(mac >> 8), uint8_t(mac)};
  const uint8_t eui[8] = {uint8_t(m[0] ^ 2), m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]};
  std::copy(eui, eui + 8, gid + 8);
  std::copy(gid, gid + 16, g.begin() + 8);
  std::copy(gid, gid + 16, g.begin() + 24);
  return g;
}

}  // namespace

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
    // A receive buffer the responder may not write: its receive fails, the requester is NAKed.
    if (uint16_t err = resolve(peer, receive, true)) {
      enter_error(peer, true, true, FLUSH_GENERAL_ERR, err);
      return fail(qp, FLUSH_REM_OP_ERR);
    }
  }
  Fragments local = sq_fragments(wqe);
  if (uint16_t err = resolve(qp, local, read)) return fail(qp, err);
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
                                           read ? RemoteAccess::read : RemoteAccess::write, peer.pd)) {
    // The responder refuses the access (NAK): the requester's QP moves to error.
    enter_error(qp, err);
    return Result::failed;
  }
  const uint64_t moved = read ? move_payload(remote_.data(), remote_.size(), local.begin(), local.count, qp.id)
                              : move_payload(local.begin(), local.count, remote_.data(), remote_.size(),
                                             send ? peer.id : qp.id);
  // A READ's remote buffer, or the sender's own buffer, could not be read. A torn message
  // is never completed at the responder: its receive stays posted.
  if (moved < total) return read ? fail(qp, FLUSH_REM_ACCESS_ERR) : payload_dma_failed(qp);
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

// A datagram: delivered to the QP and QKEY qword2 names when it has a receive posted there,
// dropped otherwise (UD has no RNR and no acknowledgement); the sender completes either way.
QpEngine::Result QpEngine::execute_ud(QpContext& qp, const uint64_t* wqe, uint8_t op) {
  const bool imm = bit(wqe[3], SQ_WQE_IMMDATAFLAG);
  if (op != SQ_SEND && op != SQ_SEND_SOL) return fail(qp, FLUSH_LOC_QP_OP_ERR);
  Fragments local = sq_fragments(wqe);
  if (uint16_t err = resolve(qp, local, false)) return fail(qp, err);
  const uint64_t total = local.bytes();
  time_.cycles(cfg_.cycles.execute);

  auto peer_it = qps_.find(uint32_t(get(wqe[2], SQ_WQE_DESTQPN)));
  Fragments receive;
  bool delivered = false;
  if (peer_it != qps_.end() && peer_it->second.type == QP_TYPE_ROCE_UD && !peer_it->second.in_error &&
      peer_it->second.qkey == uint32_t(get(wqe[2], SQ_WQE_DESTQKEY)) &&
      next_receive(peer_it->second, receive) == Receive::posted) {
    QpContext& peer = peer_it->second;
    if (uint16_t err = resolve(peer, receive, true)) {  // the datagram is lost with the receive
      enter_error(peer, false, true, 0, err);
      counters_.ud_dropped++;
      if (bit(wqe[3], SQ_WQE_SIGCOMPL)) complete_sq(qp, op, 0, 0);
      return Result::done;
    }
    const uint32_t grh = cfg_.ud_grh.value_or(false) ? kGrhBytes : 0;
    const uint64_t capacity = receive.bytes();
    CqeFields rq;
    rq.op = receive_opcode(op, imm);
    rq.solicited = op == SQ_SEND_SOL;
    rq.stag_or_src_qpn = qp.id;
    rq.stag_or_ipv4 = cfg_.ud_ipv4;
    if (total + grh > capacity) {
      rq.error = true;
      rq.major_err = MSG_ERROR_MAJOR;
      rq.minor_err = FLUSH_LOC_LEN_ERR;
    } else if (place_grh(receive, grh, total, peer.id) &&
               move_payload(local.begin(), local.count, receive.begin(), receive.count, peer.id) == total) {
      rq.payload_len = uint32_t(total + grh);  // the GRH counts, as in byte_len
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
      return payload_dma_failed(qp);  // the sender's buffer could not be read
    }
    complete_rq(peer, rq);
    delivered = true;
  }
  if (!delivered) counters_.ud_dropped++;
  if (bit(wqe[3], SQ_WQE_SIGCOMPL)) complete_sq(qp, op, 0, 0);
  return Result::done;
}

// Writes the GRH (`grh` bytes: 0 or 40) at the start of the receive's buffers and leaves
// `receive` naming what follows it. False when the host refused the write.
bool QpEngine::place_grh(Fragments& receive, uint32_t grh, uint64_t payload, uint32_t reported_by) {
  if (!grh) return true;
  const std::array<uint8_t, kGrhBytes> header = ud_grh(cfg_.mac, cfg_.ud_ipv4, payload);
  const DmaPurpose purpose{DmaPurpose::payload_write, reported_by};
  uint32_t done = 0;
  unsigned first = 0;
  while (done < grh && first < receive.count) {
    Extent& f = receive.at[first];
    const uint32_t n = uint32_t(std::min<uint64_t>(f.len, grh - done));
    if (!dma_.write(f.addr, header.data() + done, n, purpose)) return false;
    done += n;
    f.addr += n;
    f.len -= n;
    if (f.len == 0) first++;
  }
  std::copy(receive.at + first, receive.at + receive.count, receive.at);
  receive.count -= first;
  return true;
}

// An atomic on 8 remote bytes, the original value returned into the local buffer. GEN_3
// devices have them (FEATURE_ATOMIC_OPS); the engine runs one WQE at a time, so the read
// and write back cannot interleave with another access of the device's.
QpEngine::Result QpEngine::execute_atomic(QpContext& qp, const uint64_t* wqe, uint8_t op) {
  time_.cycles(cfg_.cycles.execute);
  if (cfg_.generation < 3) return fail(qp, FLUSH_LOC_QP_OP_ERR);
  if (wqe[2] % 8 != 0) return fail(qp, FLUSH_REM_INV_REQ_ERR);  // atomics need natural alignment
  auto peer = qps_.find(qp.dest_qp);
  if (peer == qps_.end() || peer->second.in_error) {  // unanswered, as any RC request
    enter_error(qp, FLUSH_RETRY_EXC_ERR);
    return Result::failed;
  }
  if (uint16_t err = remote_extents(uint32_t(get(wqe[3], SQ_WQE_REMSTAG)), wqe[2], 8, RemoteAccess::atomic,
                                    peer->second.pd)) {
    enter_error(qp, err);
    return Result::failed;
  }
  Fragments result;  // where the original value goes: its 8 bytes implied, only address and key written
  result.at[0] = {wqe[0], 8};
  result.stag[0] = uint32_t(get(wqe[1], WQE_FRAG_STAG));
  result.count = 1;
  if (uint16_t err = resolve(qp, result, true)) return fail(qp, err);
  const uint64_t remote = remote_[0].addr;
  uint64_t original = 0;
  if (!dma_.read(remote, &original, 8)) return fail(qp, FLUSH_REM_ACCESS_ERR);
  const uint64_t updated = op == SQ_ATOMIC_FETCH_ADD ? original + wqe[4]
                           : original == wqe[5]      ? wqe[4]
                                                     : original;
  const DmaPurpose purpose{DmaPurpose::payload_write, qp.id};
  if (updated != original) dma_.write(remote, &updated, 8, purpose);
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(&original);
  for (unsigned i = 0, done = 0; i < result.count && done < 8; done += unsigned(result.at[i++].len))
    dma_.write(result.at[i].addr, bytes + done, uint32_t(std::min<uint64_t>(result.at[i].len, 8 - done)), purpose);
  counters_.messages++;
  counters_.bytes_moved += 8;
  if (bit(wqe[3], SQ_WQE_SIGCOMPL)) complete_sq(qp, op, 0, 0);
  return Result::done;
}

uint16_t QpEngine::remote_extents(uint32_t stag, uint64_t va, uint64_t len, RemoteAccess access, uint32_t pd) {
  remote_.clear();
  return stags_.translate(stag, va, len, access, pd, remote_);
}

// Copies the message through a bounce buffer of one chunk, so no message size, however
// large or corrupt, makes the device allocate it whole. Returns the bytes moved.
uint64_t QpEngine::move_payload(const Extent* src, size_t src_n, const Extent* dst, size_t dst_n,
                                uint32_t reported_by) {
  const DmaPurpose purpose{DmaPurpose::payload_write, reported_by};
  uint64_t moved = 0;
  size_t si = 0, di = 0;
  uint64_t s_off = 0, d_off = 0;
  while (si < src_n && di < dst_n) {
    const uint32_t n = uint32_t(std::min({uint64_t(kChunk), src[si].len - s_off, dst[di].len - d_off}));
    if (!dma_.read(src[si].addr + s_off, bounce_.data(), n)) return moved;
    dma_.write(dst[di].addr + d_off, bounce_.data(), n, purpose);
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

// What a receive's CQE says the message was: GEN_2 reports its (last) BTH opcode, GEN_3
// the sender's SQ opcode.
uint8_t QpEngine::receive_opcode(uint8_t sq_op, bool imm) const {
  if (cfg_.generation >= 3) return sq_op;
  if (sq_op == SQ_RDMA_WRITE || sq_op == SQ_RDMA_WRITE_SOL) return BTH_RDMA_WRITE_ONLY_WITH_IMMEDIATE;
  if (sq_op == SQ_SEND_INV || sq_op == SQ_SEND_SOL_INV) return BTH_SEND_ONLY_WITH_INVALIDATE;
  return imm ? BTH_SEND_ONLY_WITH_IMMEDIATE : BTH_SEND_ONLY;
}

// Completes the receive at the peer's RQ head and consumes it.
void QpEngine::complete_rq(QpContext& peer, CqeFields& rq) {
  rq.qp_ctx = peer.compl_ctx;
  rq.qp_id = peer.id;
  rq.wqe_idx = uint16_t(peer.rq_head.idx << peer.rq_shift);
  cqs_.post(peer.recv_cq, rq);
  peer.rq_head.advance(peer.rq_wqes);
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

}  // namespace irdma_sim::device
