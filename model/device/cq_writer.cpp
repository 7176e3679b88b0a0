#include "model/device/cq_writer.h"

#include <algorithm>
#include <tuple>

#include "model/device/descriptor_fields.h"

namespace irdma_sim::device {

using namespace regs;

namespace {
auto fields_of(const CqWriteOutcome& o) {
  return std::tie(o.status, o.slot, o.wrapped, o.head_read, o.overflow_began, o.event, o.ceqe,
                  o.solicited_only, o.write_error, o.main, o.ext);
}
auto fields_of(const CqArmOutcome& o) { return std::tie(o.status, o.arms, o.solicited_only, o.event, o.ceqe); }
}  // namespace

bool CqWriteOutcome::operator==(const CqWriteOutcome& o) const { return fields_of(*this) == fields_of(o); }
bool CqArmOutcome::operator==(const CqArmOutcome& o) const { return fields_of(*this) == fields_of(o); }

TlmCqWriter::TlmCqWriter(CqWriterPort& port, const StageCycles& cycles, std::unique_ptr<CqeFormatter> formatter,
                         bool main_half_first)
    : port_(port), cycles_(cycles), formatter_(std::move(formatter)), main_half_first_(main_half_first) {}

void TlmCqWriter::create(uint32_t id, const CqRing& ring) {
  last_cycles_ = 0;
  spend(cycles_.cq_context);
  Cq& cq = cqs_[id] = Cq{};
  cq.ring = ring;
}

void TlmCqWriter::resize(uint32_t id, const CqRing& ring) {
  last_cycles_ = 0;
  spend(cycles_.cq_context);
  auto it = cqs_.find(id);
  if (it == cqs_.end()) return;  // no such CQ: nothing changes
  Cq& cq = it->second;
  cq.ring.base = ring.base;
  cq.ring.size = ring.size;
  cq.ring.shadow_read_threshold = ring.shadow_read_threshold;
  cq.ring.check_overflow = ring.check_overflow;
  cq.ring.ceqe_enable = ring.ceqe_enable;
  cq.tail = {};
  cq.head_seen = 0;
  cq.resizes++;
}

void TlmCqWriter::destroy(uint32_t id) {
  last_cycles_ = 0;
  spend(cycles_.cq_context);
  cqs_.erase(id);
}

// The ring keeps one slot free, so a full ring never looks empty. The driver's head is
// re-read only when the space the device last knew of falls below the shadow read
// threshold (or below what this completion needs).
bool TlmCqWriter::room(Cq& cq, uint32_t slots, CqWriteOutcome& out) {
  const uint32_t size = cq.ring.size;
  const auto free_slots = [&] { return size - 1 - (cq.tail.idx + size - cq.head_seen) % size; };
  if (!cq.overflowed && free_slots() < std::max(slots, cq.ring.shadow_read_threshold)) {
    uint64_t head = 0;
    out.head_read = true;
    if (read_shadow(cq, &head, 8) && head < size) cq.head_seen = uint32_t(head);
  }
  if (!cq.overflowed && free_slots() >= slots) return true;
  out.status = CqWriteOutcome::overflowed;
  out.overflow_began = !cq.overflowed;
  cq.overflowed = true;
  return false;
}

bool TlmCqWriter::read_shadow(const Cq& cq, void* dst, uint32_t len) {
  spend(cycles_.cq_read);
  const bool ok = port_.read(cq.ring.shadow, dst, len);
  spend(cycles_.cq_read_beat * (len / 8));
  return ok;
}

void TlmCqWriter::write_half(const Cq& cq, uint32_t slot, uint32_t offset, const CqeHalf& half,
                             CqWriteOutcome& out) {
  spend(cycles_.cqe_format + cycles_.cqe_write);
  const unsigned stride = cq.ring.cqe_64byte ? 64 : 32;
  // One 32-byte write: the host sees qword3, the valid qword, no earlier than the rest.
  if (!port_.write(cq.ring.base + uint64_t(slot) * stride + offset, half.data(), sizeof half))
    out.write_error = true;
}

CqWriteOutcome TlmCqWriter::write(uint32_t id, const CqeFields& fields) {
  CqWriteOutcome out;
  last_cycles_ = 0;
  auto it = cqs_.find(id);
  if (it == cqs_.end()) return out;
  Cq& cq = it->second;
  spend(cycles_.cq_intake);
  const bool split = fields.extended && !cq.ring.cqe_64byte;
  if (cq.ring.check_overflow && !room(cq, split ? 2 : 1, out)) {
    spend(cycles_.cq_respond);
    return out;
  }
  out.status = CqWriteOutcome::written;
  out.slot = cq.tail.idx;
  formatter_->at_time_ps(port_.now_ps());
  out.main = formatter_->format_main(fields, cq.tail.polarity);
  // The extended half: in the main half's slot, or (32-byte CQEs) the next one, with that
  // slot's pass polarity.
  uint32_t ext_slot = out.slot, ext_offset = 32;
  if (fields.extended) {
    if (split) {
      out.wrapped = cq.tail.advance(cq.ring.size);
      ext_slot = cq.tail.idx;
      ext_offset = 0;
    }
    out.ext = formatter_->format_ext(fields, cq.tail.polarity);
  }
  if (main_half_first_) write_half(cq, out.slot, 0, out.main, out);
  if (fields.extended) write_half(cq, ext_slot, ext_offset, out.ext, out);
  if (!main_half_first_) write_half(cq, out.slot, 0, out.main, out);
  spend(cycles_.cq_respond);
  out.wrapped |= cq.tail.advance(cq.ring.size);
  if (cq.armed && (!cq.solicited_only || fields.solicited)) {
    out.event = true;
    out.ceqe = cq.ring.ceqe_enable;
    out.solicited_only = cq.solicited_only;
    cq.armed = false;
  }
  return out;
}

// The arm is read with the consumer's head (shadow qword0): an ARM_NEXT taken while CQEs
// the driver has not consumed are in the ring fires at once, so a CQE written between the
// driver's last poll and its arm still raises an event (this model's rule; REPORT_MISSED_EVENTS
// covers only what the driver saw before arming). After a resize the head is the current
// ring's only once SW_CQ_SELECT shows every retired ring drained; until then the device
// cannot tell, and fires (a spurious event costs a poll, a lost one a stall).
CqArmOutcome TlmCqWriter::arm(uint32_t id) {
  CqArmOutcome out;
  last_cycles_ = 0;
  auto it = cqs_.find(id);
  if (it == cqs_.end()) return out;
  Cq& cq = it->second;
  spend(cycles_.cq_intake);
  uint64_t shadow[5] = {};
  const bool read = read_shadow(cq, shadow, sizeof shadow);
  spend(cycles_.cq_respond);
  if (!read) {
    out.status = CqArmOutcome::failed;
    return out;
  }
  const uint64_t arm = shadow[4];
  const int seq = int(get(arm, CQ_DBSA_ARM_SEQ_NUM));
  const bool next = bit(arm, CQ_DBSA_ARM_NEXT), next_se = bit(arm, CQ_DBSA_ARM_NEXT_SE);
  out.solicited_only = !next;
  if (seq == cq.arm_seq) {
    out.status = CqArmOutcome::stale;
    return out;
  }
  out.status = CqArmOutcome::armed;
  cq.arm_seq = seq;
  out.arms = next || next_se;
  cq.solicited_only = !next;
  const bool head_is_current = get(arm, CQ_DBSA_SW_CQ_SELECT) == get(cq.resizes, CQ_DBSA_SW_CQ_SELECT);
  out.event = next && (!head_is_current || shadow[0] != cq.tail.idx);
  out.ceqe = out.event && cq.ring.ceqe_enable;
  cq.armed = out.arms && !out.event;
  return out;
}

}  // namespace irdma_sim::device
