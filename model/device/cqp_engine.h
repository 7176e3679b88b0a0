// The control QP as the device runs it: the host context handed over through
// CCQPHIGH/CCQPLOW, WQEs fetched from the CQP SQ after each CQPDB doorbell, executed,
// and completed on the CCQ (CQ 0) once it exists, with CQPTAIL tracking progress.
#pragma once

#include <cstdint>

#include "model/device/cq_engine.h"
#include "model/device/device_config.h"
#include "model/device/dma_port.h"
#include "model/device/engine_time.h"
#include "model/device/hmc.h"
#include "model/device/qp_engine.h"
#include "model/device/regs.h"
#include "model/device/ring_pos.h"
#include "model/trace/trace_log.h"

namespace irdma_sim::device {

struct CqpCounters {
  uint64_t commands = 0;
  uint64_t errors = 0;
  uint64_t hung = 0;  // 1 once the control QP wedged (DeviceConfig::cqp_hang_after_ns)
};

class CqpEngine {
 public:
  CqpEngine(const DeviceConfig& cfg, DmaPort& dma, EngineTime& time, Hmc& hmc, CqEngine& cqs,
            QpEngine& qps, StagTable& stags, CeqEngine& ceqs, AeqEngine& aeq,
            trace::TraceLog& trace);

  // Loads the host context; sets CCQPSTATUS to DONE, or DONE|ERR with CQPERRCODES.
  void start(uint64_t host_ctx);
  void stop();
  // Runs every WQE up to (not including) index `head`.
  void doorbell(uint32_t head);

  uint32_t status_reg() const { return status_; }
  uint32_t tail_reg() const { return tail_.idx | (op_err_ ? regs::CQPTAIL_OP_ERR : 0); }
  uint32_t errcodes_reg() const { return errcodes_; }
  // Function level reset: no CQP context, the registers cleared, a wedge undone.
  void reset();
  const CqpCounters& counters() const { return counters_; }

 private:
  struct Outcome {
    uint16_t major = 0;
    uint16_t minor = 0;
    uint32_t op_ret = 0;
  };
  static Outcome outcome(uint16_t minor);
  Outcome execute(const uint64_t* wqe);
  Outcome create_cq(const uint64_t* wqe);
  Outcome destroy_cq(const uint64_t* wqe);
  Outcome modify_cq(const uint64_t* wqe);
  Outcome flush_wqes(const uint64_t* wqe);
  Outcome stag_command(uint8_t op, const uint64_t* wqe);
  Outcome reg_mr(const uint64_t* wqe);
  Outcome qp_command(uint8_t op, const uint64_t* wqe);
  // cqp_command's bin for a command executed.
  void cover_command(uint8_t op, bool error);
  void fail(uint16_t major, uint16_t minor);

  const DeviceConfig& cfg_;
  DmaPort& dma_;
  EngineTime& time_;
  Hmc& hmc_;
  CqEngine& cqs_;
  QpEngine& qps_;
  StagTable& stags_;
  CeqEngine& ceqs_;
  AeqEngine& aeq_;
  trace::TraceLog& trace_;
  bool running_ = false;
  uint64_t sq_base_ = 0;
  uint32_t sq_size_ = 0;
  uint64_t cqp_ctx_ = 0;       // echoed in CCQ CQEs
  RingPos tail_;
  uint32_t status_ = 0;
  uint32_t errcodes_ = 0;
  bool op_err_ = false;
  bool wedged_ = false;  // cqp_hang_after_ns struck: nothing more is taken
  CqpCounters counters_;
};

}  // namespace irdma_sim::device
