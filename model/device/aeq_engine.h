// Asynchronous events: the AEQ created through the CQP, 16-byte AEQEs with the pass
// polarity (spec C.6, GEN_2 layout), AEQALLOC returning consumed entries, and the interrupt
// PFINT_AEQCTL routes. A full AEQ drops the event and counts it.
#pragma once

#include <cstdint>

#include "model/device/device_config.h"
#include "model/device/dma_port.h"
#include "model/device/engine_time.h"
#include "model/device/msix_vectors.h"
#include "model/device/ring_pos.h"
#include "model/trace/trace_log.h"

namespace irdma_sim::device {

// AE codes and sources this device raises. A QP's error names the queue whose work failed:
// the SQ's (the requester) or the RQ's (the responder). The AMP_* codes are in stag_table.h.
inline constexpr uint16_t AE_CQ_OPERATION_ERROR = 0x0203;
inline constexpr uint16_t AE_IB_INVALID_REQUEST = 0x0208;
inline constexpr uint16_t AE_WQE_UNEXPECTED_OPCODE = 0x020a;
inline constexpr uint16_t AE_IB_REMOTE_ACCESS_ERROR = 0x020d;
inline constexpr uint16_t AE_IB_REMOTE_OP_ERROR = 0x020e;
inline constexpr uint16_t AE_DDP_MESSAGE_TOO_LONG = 0x0303;
inline constexpr uint16_t AE_AMP_MWBIND_INVALID_RIGHTS = 0x0118;
inline constexpr uint16_t AE_LLP_TOO_MANY_RETRIES = 0x050a;
inline constexpr uint16_t AE_LCE_QP_CATASTROPHIC = 0x0700;
inline constexpr uint16_t AE_LOCAL_QP_CATASTROPHIC = 0x0704;
inline constexpr uint16_t AE_LCE_CQ_CATASTROPHIC = 0x0702;
inline constexpr uint8_t AE_SOURCE_RQ = 0x1;
inline constexpr uint8_t AE_SOURCE_CQ = 0x2;
inline constexpr uint8_t AE_SOURCE_SQ = 0x5;

struct AsyncEvent {
  uint64_t ctx = 0;      // the object's completion context
  uint32_t object_id = 0;
  uint16_t code = 0;
  uint8_t source = 0;
};

struct AeqEngineCounters {
  uint64_t aeqes = 0;
  uint64_t dropped = 0;  // no AEQ, or it was full
};

class AeqEngine {
 public:
  AeqEngine(DmaPort& dma, EngineTime& time, trace::TraceLog& trace, MsixVectors& vectors);

  // CQP CREATE_AEQ / DESTROY_AEQ; return a CQP minor code or 0.
  uint16_t create(uint64_t base, uint32_t entries);
  uint16_t destroy();
  void post(const AsyncEvent& ae);
  // AEQALLOC: the driver consumed `n` more AEQEs.
  void consumed(uint32_t n);
  void write_aeqctl(uint32_t value) { aeqctl_ = value; }
  uint32_t read_aeqctl() const { return aeqctl_; }
  // Whether the AEQ is routed to `vector` and holds AEQEs the driver has not returned.
  bool unconsumed(unsigned vector) const;
  // Function level reset: no AEQ, AEQCTL cleared.
  void reset() {
    exists_ = false;
    tail_ = {};
    outstanding_ = 0;
    aeqctl_ = 0;
  }
  const AeqEngineCounters& counters() const { return counters_; }

 private:
  DmaPort& dma_;
  EngineTime& time_;
  trace::TraceLog& trace_;
  MsixVectors& vectors_;
  bool exists_ = false;
  uint64_t base_ = 0;
  uint32_t entries_ = 0;
  RingPos tail_;
  uint64_t outstanding_ = 0;  // written, not yet returned through AEQALLOC
  uint32_t aeqctl_ = 0;
  AeqEngineCounters counters_;
};

}  // namespace irdma_sim::device
