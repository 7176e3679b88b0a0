// The CQ engine: the CQ context table and, for each completion, a CQE written by its CQ
// writer (cq_writer.h), with what follows from it: counters, trace and coverage, the
// completion event's CEQE, the AEQE of an overflow.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "model/device/aeq_engine.h"
#include "model/device/ceq_engine.h"
#include "model/device/cq_writer.h"
#include "model/device/dma_port.h"
#include "model/device/engine_time.h"
#include "model/trace/trace_log.h"

namespace irdma_sim::device {

struct CqContext {
  uint32_t id = 0;
  uint32_t size = 0;           // ring entries
  uint64_t base = 0;           // ring address
  uint64_t shadow = 0;         // shadow area address
  uint64_t ctx = 0;            // CQ context (CEQE payload)
  uint32_t ceq_id = 0;
  bool ceq_id_valid = false;
  bool check_overflow = false;
  bool ceqe_mask = false;
  bool cqe_64byte = false;
  uint32_t shadow_read_threshold = 0;
  uint32_t events_unacked = 0;  // its CEQEs awaiting CQACK (a promotion can make two)
  bool catastrophic = false;    // its shadow area could not be read: in error for good
};

struct CqEngineCounters {
  uint64_t cqes_written = 0;
  uint64_t ccq_cqes = 0;       // of cqes_written, on the CCQ (CQ 0)
  uint64_t extended_cqes = 0;
  uint64_t cqes_dropped = 0;   // for a CQ that does not exist
  uint64_t arms = 0;           // arm doorbells taken
  uint64_t stale_arms = 0;     // arm doorbells whose sequence number was already taken
  uint64_t events = 0;         // completions that raised an event
  uint64_t cqes_overflowed = 0;  // completions not written: their CQ was full or in error
  uint64_t overflows = 0;        // CQs that overflowed (each raised CQ_OPERATION_ERROR)
  uint64_t catastrophic = 0;     // CQs whose shadow area could not be read (each raised LCE_CQ_CATASTROPHIC)
  uint64_t head_reads = 0;       // shadow qword0 reads for overflow checking
  uint64_t cqes_refused = 0;     // completions whose CQE write failed (refused, or bus mastering off)
  uint64_t resizes = 0;
};

class CqEngine {
 public:
  CqEngine(DmaPort& dma, EngineTime& time, CeqEngine& ceqs, AeqEngine& aeq, trace::TraceLog& trace,
           const CqWriterFactory& make_writer);

  bool exists(uint32_t cq_id) const { return cqs_.count(cq_id) != 0; }
  void add(const CqContext& cq);
  bool remove(uint32_t cq_id);
  // MODIFY_CQ's resize: a new ring, written from its start with polarity 1.
  void resize(uint32_t cq_id, uint64_t base, uint32_t size, uint32_t shadow_read_threshold,
              bool check_overflow, bool ceqe_mask);
  // CQACK: the CQ's CEQE was consumed.
  void ack(uint32_t cq_id);
  const CqContext* find(uint32_t cq_id) const;

  // Writes one completion to CQ `cq_id`; false when nothing was written (no such CQ, or no
  // room: the CQ overflowed). An armed CQ then raises its completion event and is disarmed.
  bool post(uint32_t cq_id, const CqeFields& fields);
  // The CQARM doorbell: reads the arm the driver left in shadow qword4 (spec C.7, D.5). An
  // arm whose sequence number was taken already is stale: ignored. False: no such CQ, or
  // its shadow area is unreadable.
  bool arm(uint32_t cq_id);
  // Function level reset: every CQ context gone, the writer's with them.
  void reset();
  const CqEngineCounters& counters() const { return counters_; }
  CqWriter& writer() { return *writer_; }

 private:
  // The writer's port: host memory through the engine's DMA master, on its clock.
  class EnginePort final : public CqWriterPort {
   public:
    EnginePort(DmaPort& dma, EngineTime& time) : dma_(dma), time_(time) {}
    bool read(uint64_t addr, void* dst, uint32_t len) override { return dma_.read(addr, dst, len, purpose); }
    bool write(uint64_t addr, const void* src, uint32_t len) override { return dma_.write(addr, src, len, purpose); }
    void cycles(uint32_t n) override { time_.cycles(n); }
    uint64_t now_ps() const override { return time_.now_ps(); }

    DmaPurpose purpose;  // of the writer's accesses, for the request in hand
    bool mastering() const { return dma_.mastering(); }

   private:
    DmaPort& dma_;
    EngineTime& time_;
  };

  static CqRing ring_of(const CqContext& cq);
  void cover_write(const CqContext& cq, uint32_t slot, bool extended, bool wrapped);
  // The CQ's completion event, the writer having disarmed it: a CEQE if `ceqe`.
  void raise_event(CqContext& cq, bool ceqe);
  void overflowed(const CqContext& cq, const CqeFields& fields, bool began);
  // The CQ is lost (LCE_CQ_CATASTROPHIC): it writes nothing more.
  void catastrophe(CqContext& cq);

  EngineTime& time_;
  CeqEngine& ceqs_;
  AeqEngine& aeq_;
  trace::TraceLog& trace_;
  EnginePort port_;
  std::unique_ptr<CqWriter> writer_;
  std::unordered_map<uint32_t, CqContext> cqs_;
  CqEngineCounters counters_;
};

}  // namespace irdma_sim::device
