// Completion events: CEQs created through the CQP, 8-byte CEQEs written with the pass
// polarity when an armed CQ gets a completion, and the interrupt each CEQ raises through
// its GLINT_CEQCTL routing. A CQ's CEQE stays unacknowledged until CQACK names the CQ (or
// the CQ is destroyed): a vector enabled while its CEQs hold one fires again, so an event
// that lands during the drain is not lost.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>
#include <vector>

#include "model/device/device_config.h"
#include "model/device/dma_port.h"
#include "model/device/engine_time.h"
#include "model/device/msix_vectors.h"
#include "model/device/ring_pos.h"
#include "model/trace/trace_log.h"

namespace irdma_sim::device {

struct CeqEngineCounters {
  uint64_t ceqes = 0;
  uint64_t cqacks = 0;
  uint64_t ceqes_dropped = 0;       // for a CEQ that does not exist, or one full
};

class CeqEngine {
 public:
  CeqEngine(const DeviceConfig& cfg, DmaPort& dma, EngineTime& time, trace::TraceLog& trace,
            MsixVectors& vectors);

  // CQP CREATE_CEQ / DESTROY_CEQ; return a CQP minor code or 0.
  uint16_t create(uint32_t ceq_id, uint64_t base, uint32_t entries);
  uint16_t destroy(uint32_t ceq_id);

  // A completion event of the CQ whose context is `cq_ctx`: a CEQE on CEQ `ceq_id`, then
  // its interrupt.
  // False when it wrote none (no such CEQ, or a full one).
  bool notify(uint32_t ceq_id, uint64_t cq_ctx);
  // A CEQE on CEQ `ceq_id` is acknowledged (CQACK), or (`acked` false) its CQ is gone.
  void ack(uint32_t ceq_id, bool acked = true);
  void write_ceqctl(uint32_t ceq_id, uint32_t value);
  uint32_t read_ceqctl(uint32_t ceq_id) const;
  // Whether a CEQ routed to `vector` holds an unacknowledged CEQE.
  bool unacked(unsigned vector) const;
  // Function level reset: no CEQ, every CEQCTL cleared (the counters are the bench's, kept).
  void reset();

  const CeqEngineCounters& counters() const { return counters_; }

 private:
  struct Ceq {
    uint64_t base = 0;
    uint32_t entries = 0;
    RingPos tail;
    uint64_t unacked = 0;
  };

  const DeviceConfig& cfg_;
  DmaPort& dma_;
  EngineTime& time_;
  trace::TraceLog& trace_;
  MsixVectors& vectors_;
  std::unordered_map<uint32_t, Ceq> ceqs_;
  std::vector<uint32_t> ceqctl_;  // by CEQ id
  CeqEngineCounters counters_;
};

}  // namespace irdma_sim::device
