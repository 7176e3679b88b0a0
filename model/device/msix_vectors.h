// The device's interrupt vectors as GLINT_DYN_CTL controls them: a cause raises its vector
// when enabled (INTENA), after which the vector masks itself until the driver enables it
// again; a cause while masked leaves it pending (CLEARPBA clears that), and a vector whose
// causes still hold unconsumed events fires again when enabled. INTERVAL spaces a vector's
// interrupts (moderation).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "model/device/engine_time.h"

namespace irdma_sim::device {

struct MsixVectorCounters {
  uint64_t interrupts = 0;          // MSI-X messages asked for
  uint64_t moderated = 0;           // of those, held back by the vector's interval
  uint64_t events_while_masked = 0;
};

class MsixVectors {
 public:
  // `raise(vector, due_ps)` sends MSI-X `vector`; `cause_pending(vector)` says whether any
  // cause routed to it holds events the driver has not consumed.
  using Raise = std::function<void(unsigned vector, uint64_t due_ps)>;
  MsixVectors(EngineTime& time, unsigned vectors, Raise raise,
              std::function<bool(unsigned)> cause_pending);

  void event(unsigned vector);
  // INTENA bit 0, CLEARPBA bit 1, INTERVAL 16:5 (2 us units). Writing 0 disables.
  void write_dyn_ctl(unsigned vector, uint32_t value);
  uint32_t read_dyn_ctl(unsigned vector) const;
  unsigned size() const { return unsigned(vectors_.size()); }
  // Function level reset: every vector disabled, nothing pending.
  void reset() { std::fill(vectors_.begin(), vectors_.end(), Vector{}); }
  const MsixVectorCounters& counters() const { return counters_; }

 private:
  struct Vector {
    uint32_t dyn_ctl = 0;
    bool enabled = false;
    bool pending = false;
    uint64_t interval_ps = 0;
    uint64_t last_fire_ps = 0;
    bool fired = false;
  };
  void fire(unsigned vector);

  EngineTime& time_;
  Raise raise_;
  std::function<bool(unsigned)> cause_pending_;
  std::vector<Vector> vectors_;
  MsixVectorCounters counters_;
};

}  // namespace irdma_sim::device
