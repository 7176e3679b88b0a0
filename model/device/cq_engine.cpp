#include "model/device/cq_engine.h"

#include <algorithm>
#include <cstring>

#include "model/device/descriptor_fields.h"

namespace irdma_sim::device {

using namespace regs;

CqEngine::CqEngine(const DeviceConfig& cfg, DmaPort& dma, EngineTime& time, CeqEngine& ceqs,
                   AeqEngine& aeq, trace::TraceLog& trace, std::unique_ptr<CqeFormatter> formatter)
    : cfg_(cfg), dma_(dma), time_(time), ceqs_(ceqs), aeq_(aeq), trace_(trace),
      formatter_(std::move(formatter)) {}

// The ring keeps one slot free, so a full ring never looks empty. The driver's head is
// re-read only when the space the device last knew of falls below the shadow read
// threshold (or below what this completion needs).
bool CqEngine::room(CqContext& cq, uint32_t slots, const CqeFields& fields) {
  const auto free_slots = [&] { return cq.size - 1 - (cq.tail.idx + cq.size - cq.head_seen) % cq.size; };
  if (!cq.overflowed && free_slots() < std::max(slots, cq.shadow_read_threshold)) {
    uint64_t head = 0;
    counters_.head_reads++;
    trace_.coverage().hit(trace::Cover::cq_ring, {1});
    if (dma_.read(cq.shadow, &head, 8) && head < cq.size) cq.head_seen = uint32_t(head);
  }
  if (!cq.overflowed && free_slots() >= slots) return true;
  counters_.cqes_overflowed++;
  trace_.coverage().hit(trace::Cover::cq_ring, {2});
  trace_.event(time_.now_ps(), "cqe_overflow")
      .num("cq", cq.id)
      .num("qp", fields.qp_id)
      .num("sq", fields.sq)
      .num("wqe_idx", fields.wqe_idx)
      .num("dropped", 1);
  if (!cq.overflowed) {
    cq.overflowed = true;
    counters_.overflows++;
    aeq_.post({cq.ctx, cq.id, AE_CQ_OPERATION_ERROR, AE_SOURCE_CQ});
  }
  return false;
}

bool CqEngine::remove(uint32_t cq_id) {
  auto it = cqs_.find(cq_id);
  if (it == cqs_.end()) return false;
  for (; it->second.events_unacked; it->second.events_unacked--) ceqs_.ack(it->second.ceq_id, false);
  cqs_.erase(it);
  return true;
}

void CqEngine::resize(uint32_t cq_id, uint64_t base, uint32_t size, uint32_t shadow_read_threshold,
                      bool check_overflow, bool ceqe_mask) {
  CqContext& cq = cqs_.at(cq_id);
  trace_.coverage().hit(trace::Cover::cq_resize, {size > cq.size ? 0u : size < cq.size ? 1u : 2u});
  cq.base = base;
  cq.size = size;
  cq.shadow_read_threshold = shadow_read_threshold;
  cq.check_overflow = check_overflow;
  cq.ceqe_mask = ceqe_mask;
  cq.tail = {};
  cq.head_seen = 0;
  cq.resizes++;
  counters_.resizes++;
  trace_.event(time_.now_ps(), "cq_resize").num("cq", cq_id).num("size", size).addr("base", base);
}

void CqEngine::ack(uint32_t cq_id) {
  auto it = cqs_.find(cq_id);
  if (it == cqs_.end() || !it->second.events_unacked) return;
  it->second.events_unacked--;
  ceqs_.ack(it->second.ceq_id);
}

// The arm is read with the consumer's head (shadow qword0): an ARM_NEXT taken while CQEs
// the driver has not consumed are in the ring fires at once, so a CQE written between the
// driver's last poll and its arm still raises an event (this model's rule; REPORT_MISSED_EVENTS
// covers only what the driver saw before arming). After a resize the head is the current
// ring's only once SW_CQ_SELECT shows every retired ring drained; until then the device
// cannot tell, and fires (a spurious event costs a poll, a lost one a stall).
bool CqEngine::arm(uint32_t cq_id) {
  auto it = cqs_.find(cq_id);
  uint64_t shadow[5] = {};
  if (it == cqs_.end() || !dma_.read(it->second.shadow, shadow, sizeof shadow)) return false;
  CqContext& cq = it->second;
  const uint64_t arm = shadow[4];
  const int seq = int(get(arm, CQ_DBSA_ARM_SEQ_NUM));
  const bool next = bit(arm, CQ_DBSA_ARM_NEXT), next_se = bit(arm, CQ_DBSA_ARM_NEXT_SE);
  const unsigned kind = next ? 0 : 1;
  if (seq == cq.arm_seq) {
    counters_.stale_arms++;
    trace_.coverage().hit(trace::Cover::cq_arm, {kind, 3});
    return true;
  }
  cq.arm_seq = seq;
  cq.armed = next || next_se;
  cq.solicited_only = !next;
  counters_.arms++;
  const bool head_is_current = get(arm, CQ_DBSA_SW_CQ_SELECT) == get(cq.resizes, CQ_DBSA_SW_CQ_SELECT);
  const bool now = next && (!head_is_current || shadow[0] != cq.tail.idx);
  if (cq.armed) trace_.coverage().hit(trace::Cover::cq_arm, {kind, now ? 1u : 0u});
  if (now) raise_event(cq);
  return true;
}

void CqEngine::raise_event(CqContext& cq) {
  cq.armed = false;
  if (!cq.ceqe_mask || !cq.ceq_id_valid) return;
  if (!ceqs_.notify(cq.ceq_id, cq.ctx)) return;
  counters_.events++;
  cq.events_unacked++;
}

const CqContext* CqEngine::find(uint32_t cq_id) const {
  auto it = cqs_.find(cq_id);
  return it == cqs_.end() ? nullptr : &it->second;
}

void CqEngine::write_half(CqContext& cq, uint32_t slot, uint32_t offset, const CqeHalf& half) {
  const unsigned stride = cq.cqe_64byte ? 64 : 32;
  const uint64_t addr = cq.base + uint64_t(slot) * stride + offset;
  // One 32-byte write: the host sees qword3, the valid qword, no earlier than the rest.
  dma_.write(addr, half.data(), sizeof half);
}

// cqe_write's bins: where a CQE's last half fell, and cq_ring's wrap.
void CqEngine::cover_write(const CqContext& cq, uint32_t slot, bool extended, bool wrapped) {
  const bool split = extended && !cq.cqe_64byte && slot == cq.size - 1;
  const uint32_t last = extended && !cq.cqe_64byte ? (slot + 1) % cq.size : slot;
  trace_.coverage().hit(trace::Cover::cqe_write,
                        {cq.cqe_64byte ? 1u : 0u, extended ? 1u : 0u, split ? 2u : last == cq.size - 1 ? 1u : 0u});
  if (wrapped) trace_.coverage().hit(trace::Cover::cq_ring, {0});
}

bool CqEngine::post(uint32_t cq_id, const CqeFields& fields) {
  auto it = cqs_.find(cq_id);
  if (it == cqs_.end()) {
    counters_.cqes_dropped++;
    trace_.event(time_.now_ps(), "cqe_dropped").num("cq", cq_id);
    return false;
  }
  CqContext& cq = it->second;
  time_.cycles(cfg_.cycles.cqe_format);
  if (cq.check_overflow && !room(cq, fields.extended && !cq.cqe_64byte ? 2 : 1, fields)) return true;
  const uint32_t slot = cq.tail.idx;
  formatter_->at_time_ps(time_.now_ps());
  const CqeHalf main = formatter_->format_main(fields, cq.tail.polarity);
  CqeHalf ext{};
  bool wrapped = false;
  if (fields.extended) {
    if (cq.cqe_64byte) {
      ext = formatter_->format_ext(fields, cq.tail.polarity);
      write_half(cq, slot, 32, ext);
    } else {
      // The extended half takes the next slot, with that slot's pass polarity. It is
      // written first so a reader that sees the main half valid finds the rest valid too.
      wrapped = cq.tail.advance(cq.size);
      ext = formatter_->format_ext(fields, cq.tail.polarity);
      write_half(cq, cq.tail.idx, 0, ext);
    }
    counters_.extended_cqes++;
  }
  time_.cycles(cfg_.cycles.cqe_write);
  write_half(cq, slot, 0, main);
  wrapped |= cq.tail.advance(cq.size);
  counters_.cqes_written++;
  if (cq_id == 0) counters_.ccq_cqes++;
  cover_write(cq, slot, fields.extended, wrapped);
  if (cq.armed && (!cq.solicited_only || fields.solicited)) {
    trace_.coverage().hit(trace::Cover::cq_arm, {cq.solicited_only ? 1u : 0u, 2});
    raise_event(cq);
  }

  if (trace_.enabled()) {
    uint8_t bytes[64];
    std::memcpy(bytes, main.data(), 32);
    if (fields.extended) std::memcpy(bytes + 32, ext.data(), 32);
    const unsigned stride = cq.cqe_64byte ? 64 : 32;
    trace_.event(time_.now_ps(), "cqe")
        .num("cq", cq_id)
        .num("slot", slot)
        .addr("addr", cq.base + uint64_t(slot) * stride)
        .hex("bytes", bytes, fields.extended ? 64 : 32);
  }
  return true;
}

}  // namespace irdma_sim::device
