// Completion events: CEQs created through the CQP, 8-byte CEQEs written with the pass
// polarity when an armed CQ gets a completion, and the interrupt each CEQ raises through
// its GLINT_CEQCTL routing and its vector's GLINT_DYN_CTL (enable, auto-mask after firing,
// moderation interval). A CQ's CEQE stays unacknowledged until CQACK names the CQ (or the
// CQ is destroyed); a vector re-enabled while its CEQs hold unacknowledged CEQEs fires
// again, so an event that lands during the drain is not lost.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "model/device/device_config.h"
#include "model/device/dma_port.h"
#include "model/device/engine_time.h"
#include "model/trace/trace_log.h"

namespace irdma_sim::device {

struct CeqEngineCounters {
  uint64_t ceqes = 0;
  uint64_t cqacks = 0;
  uint64_t interrupts = 0;          // MSI-X messages the CEQs asked for
  uint64_t moderated = 0;           // of those, held back by a vector's interval
  uint64_t events_while_masked = 0;
  uint64_t ceqes_dropped = 0;       // for a CEQ that does not exist
};

class CeqEngine {
 public:
  // `raise(vector, due_ps)`: sends MSI-X `vector` at `due_ps`.
  using Raise = std::function<void(unsigned vector, uint64_t due_ps)>;
  CeqEngine(const DeviceConfig& cfg, DmaPort& dma, EngineTime& time, trace::TraceLog& trace,
            unsigned vectors, Raise raise);

  // CQP CREATE_CEQ / DESTROY_CEQ; return a CQP minor code or 0.
  uint16_t create(uint32_t ceq_id, uint64_t base, uint32_t entries);
  uint16_t destroy(uint32_t ceq_id);

  // A completion event of the CQ whose context is `cq_ctx`: a CEQE on CEQ `ceq_id`, then
  // its interrupt.
  void notify(uint32_t ceq_id, uint64_t cq_ctx);
  // A CEQE on CEQ `ceq_id` is acknowledged (CQACK), or its CQ is gone.
  void ack(uint32_t ceq_id);
  void write_ceqctl(uint32_t ceq_id, uint32_t value);
  void write_dyn_ctl(unsigned vector, uint32_t value);
  uint32_t read_ceqctl(uint32_t ceq_id) const;
  uint32_t read_dyn_ctl(unsigned vector) const;

  const CeqEngineCounters& counters() const { return counters_; }

 private:
  struct Ceq {
    uint64_t base = 0;
    uint32_t entries = 0;
    uint32_t tail = 0;
    bool polarity = true;
    uint64_t unacked = 0;
  };
  struct Vector {
    uint32_t dyn_ctl = 0;        // as last written
    bool enabled = false;        // INTENA, cleared when the vector fires
    bool pending = false;        // an event came while it was masked
    uint64_t interval_ps = 0;
    uint64_t last_fire_ps = 0;
    bool fired = false;
  };
  void event(unsigned vector);
  void fire(unsigned vector);
  bool unacked(unsigned vector) const;

  const DeviceConfig& cfg_;
  DmaPort& dma_;
  EngineTime& time_;
  trace::TraceLog& trace_;
  Raise raise_;
  std::unordered_map<uint32_t, Ceq> ceqs_;
  std::vector<uint32_t> ceqctl_;  // by CEQ id
  std::vector<Vector> vectors_;
  CeqEngineCounters counters_;
};

}  // namespace irdma_sim::device
