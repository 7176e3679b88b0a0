#include "model/device/ceq_engine.h"

#include "model/device/regs.h"

namespace irdma_sim::device {

using namespace regs;

namespace {

constexpr uint32_t kMinCeqEntries = 8;
constexpr uint32_t kMaxCeqEntries = 262143;  // max_hw_ceq_size
constexpr uint64_t kIntervalUnitPs = 2'000'000;  // GLINT_DYN_CTL INTERVAL counts 2 us

unsigned msix_index(uint32_t ceqctl) { return unsigned(get(ceqctl, 10, 0)); }
bool cause_enabled(uint32_t ceqctl) { return bit(ceqctl, 30); }

}  // namespace

CeqEngine::CeqEngine(const DeviceConfig& cfg, DmaPort& dma, EngineTime& time,
                     trace::TraceLog& trace, unsigned vectors, Raise raise)
    : cfg_(cfg), dma_(dma), time_(time), trace_(trace), raise_(std::move(raise)),
      ceqctl_(cfg.num_ceqs), vectors_(vectors) {}

uint16_t CeqEngine::create(uint32_t ceq_id, uint64_t base, uint32_t entries) {
  if (ceq_id >= cfg_.num_ceqs) return CQP_MINOR_BAD_ID;
  if (ceqs_.count(ceq_id)) return CQP_MINOR_ID_IN_USE;
  if (entries < kMinCeqEntries || entries > kMaxCeqEntries) return CQP_MINOR_BAD_SIZE;
  Ceq& q = ceqs_[ceq_id];
  q.base = base;
  q.entries = entries;
  return 0;
}

uint16_t CeqEngine::destroy(uint32_t ceq_id) {
  return ceqs_.erase(ceq_id) ? 0 : CQP_MINOR_NO_SUCH_OBJECT;
}

void CeqEngine::notify(uint32_t ceq_id, uint64_t cq_ctx) {
  auto it = ceqs_.find(ceq_id);
  if (it == ceqs_.end()) {
    counters_.ceqes_dropped++;
    return;
  }
  Ceq& q = it->second;
  const uint64_t ceqe = (cq_ctx & mask(62, 0)) | uint64_t(q.polarity) << 63;
  dma_.write(q.base + uint64_t(q.tail) * 8, &ceqe, 8);
  if (++q.tail == q.entries) {
    q.tail = 0;
    q.polarity = !q.polarity;
  }
  q.unacked++;
  counters_.ceqes++;
  trace_.event(time_.now_ps(), "ceqe").num("ceq", ceq_id).addr("ctx", cq_ctx);
  if (cause_enabled(ceqctl_[ceq_id])) event(msix_index(ceqctl_[ceq_id]));
}

void CeqEngine::ack(uint32_t ceq_id) {
  auto it = ceqs_.find(ceq_id);
  if (it == ceqs_.end() || it->second.unacked == 0) return;
  it->second.unacked--;
  counters_.cqacks++;
}

void CeqEngine::event(unsigned vector) {
  if (vector >= vectors_.size()) return;
  Vector& v = vectors_[vector];
  if (!v.enabled) {
    v.pending = true;
    counters_.events_while_masked++;
    return;
  }
  fire(vector);
}

// The vector fires, no sooner than its interval after the last time, and masks itself
// until the driver enables it again.
void CeqEngine::fire(unsigned vector) {
  Vector& v = vectors_[vector];
  uint64_t due = time_.now_ps();
  if (v.fired && v.interval_ps && due < v.last_fire_ps + v.interval_ps) {
    due = v.last_fire_ps + v.interval_ps;
    counters_.moderated++;
  }
  v.enabled = false;
  v.pending = false;
  v.fired = true;
  v.last_fire_ps = due;
  counters_.interrupts++;
  raise_(vector, due);
}

bool CeqEngine::unacked(unsigned vector) const {
  for (const auto& [id, q] : ceqs_)
    if (q.unacked && cause_enabled(ceqctl_[id]) && msix_index(ceqctl_[id]) == vector)
      return true;
  return false;
}

void CeqEngine::write_ceqctl(uint32_t ceq_id, uint32_t value) {
  if (ceq_id < ceqctl_.size()) ceqctl_[ceq_id] = value;
}

uint32_t CeqEngine::read_ceqctl(uint32_t ceq_id) const {
  return ceq_id < ceqctl_.size() ? ceqctl_[ceq_id] : 0;
}

// INTENA bit 0, CLEARPBA bit 1, INTERVAL 16:5 (2 us units). Writing 0 disables.
void CeqEngine::write_dyn_ctl(unsigned vector, uint32_t value) {
  if (vector >= vectors_.size()) return;
  Vector& v = vectors_[vector];
  v.dyn_ctl = value;
  if (!bit(value, 0)) {
    v.enabled = false;
    return;
  }
  v.enabled = true;
  v.interval_ps = get(value, 16, 5) * kIntervalUnitPs;
  if (bit(value, 1)) v.pending = false;
  if (v.pending || unacked(vector)) fire(vector);
}

uint32_t CeqEngine::read_dyn_ctl(unsigned vector) const {
  return vector < vectors_.size() ? vectors_[vector].dyn_ctl : 0;
}

}  // namespace irdma_sim::device
