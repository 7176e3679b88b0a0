#include "model/device/msix_vectors.h"

#include "model/device/regs.h"

namespace irdma_sim::device {

using namespace regs;

namespace {

constexpr uint64_t kIntervalUnitPs = 2'000'000;  // INTERVAL counts 2 us

}  // namespace

MsixVectors::MsixVectors(EngineTime& time, unsigned vectors, Raise raise,
                         std::function<bool(unsigned)> cause_pending)
    : time_(time), raise_(std::move(raise)), cause_pending_(std::move(cause_pending)),
      vectors_(vectors) {}

void MsixVectors::event(unsigned vector) {
  if (vector >= vectors_.size()) return;
  Vector& v = vectors_[vector];
  if (!v.enabled) {
    v.pending = true;
    counters_.events_while_masked++;
    return;
  }
  fire(vector);
}

// The vector fires, no sooner than its interval after the last time, and masks itself.
void MsixVectors::fire(unsigned vector) {
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

void MsixVectors::write_dyn_ctl(unsigned vector, uint32_t value) {
  if (vector >= vectors_.size()) return;
  Vector& v = vectors_[vector];
  v.dyn_ctl = value;
  if (!bit(value, GLINT_DYN_CTL_INTENA)) {
    v.enabled = false;
    return;
  }
  v.enabled = true;
  v.interval_ps = get(value, GLINT_DYN_CTL_INTERVAL) * kIntervalUnitPs;
  if (bit(value, GLINT_DYN_CTL_CLEARPBA)) v.pending = false;
  if (v.pending || cause_pending_(vector)) fire(vector);
}

uint32_t MsixVectors::read_dyn_ctl(unsigned vector) const {
  return vector < vectors_.size() ? vectors_[vector].dyn_ctl : 0;
}

}  // namespace irdma_sim::device
