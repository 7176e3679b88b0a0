// CqWriter backed by the Verilated RTL (rtl/cq_writer.v). Every request runs on the clocked
// model; its memory side is an AXI4 slave here that turns each burst into one access on the
// CQ engine's port, so a CQE half is one 32-byte write with its valid qword, and the shadow
// reads are the bus's. Backpressure, latency and error responses are the slave's to give
// (Throttle, and the port's own refusals). The Verilator headers stay behind a pimpl.
//
// Time: with Timing::rtl the engine is charged the RTL's clock cycles as they pass (before
// each memory access, and at the response); with Timing::model it is charged the model's
// stage costs at the points the TLM writer charges them, so a run's timing is the TLM
// run's while the bytes come from the RTL.
//
// An invariant monitor of the RTL that fires (cq_writer.v's ASSERT_*), or a block that
// stops making progress while nothing holds it back, throws RtlAssertionError /
// std::runtime_error.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "model/device/cq_writer.h"

namespace irdma_sim::rtl {

class RtlAssertionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RtlCqWriter final : public device::CqWriter {
 public:
  enum class Timing { rtl, model };
  // The RTL's CQ_ID_W: rtl_bridge/CMakeLists.txt reads it here and verilates the block with it.
  static constexpr unsigned kCqIdBits = 10;
  static constexpr uint32_t kMaxCqs = 1u << kCqIdBits;

  // Per-cycle gates for stress tests: a ready gate is asked each cycle its channel has
  // something to take, false holding ready low; a valid gate each cycle until it lets the
  // response out, which then stays out until taken.
  struct Throttle {
    std::function<bool()> aw_ready, w_ready, b_valid, ar_ready, r_valid, rsp_ready;
  };

  struct Coverage {
    uint64_t line_hit = 0, line_total = 0;
    uint64_t toggle_hit = 0, toggle_total = 0;
  };

  // Builds and resets the model (every context cleared). Line coverage is always counted;
  // `toggle_coverage` runs the build of the block that counts toggles too, many times slower.
  RtlCqWriter(device::CqWriterPort& port, Timing timing, const device::StageCycles& model_cycles,
              bool toggle_coverage = false);
  ~RtlCqWriter() override;
  RtlCqWriter(const RtlCqWriter&) = delete;
  RtlCqWriter& operator=(const RtlCqWriter&) = delete;

  // CQ numbers must be below kMaxCqs, ring sizes 2 to 2^21 - 1 and shadow read thresholds
  // below 2^18 (std::out_of_range otherwise).
  void create(uint32_t cq, const device::CqRing& ring) override;
  void resize(uint32_t cq, const device::CqRing& ring) override;
  void destroy(uint32_t cq) override;
  device::CqWriteOutcome write(uint32_t cq, const device::CqeFields& fields) override;
  device::CqArmOutcome arm(uint32_t cq) override;
  uint64_t last_cycles() const override;

  void set_throttle(Throttle throttle);
  // Fault injection: flips the CQ's armed bit in the context store, as an upset in its RAM
  // would (the invariant monitors must catch what follows).
  void flip_armed_bit(uint32_t cq);
  uint64_t cycles() const;  // since reset
  // Dumps every following clock edge to a VCD at `path`, in picoseconds, a clock period
  // being `period_ps`; each request starts no earlier than the engine's time.
  void enable_vcd(const std::string& path, uint64_t period_ps);
  // Verilator's line (and, if counted, toggle) coverage of the block so far: written to
  // `path` (its .dat format, for verilator_coverage) and summed. Throws std::runtime_error
  // when unwritable.
  Coverage write_coverage(const std::string& path);

  struct Model;  // the Verilated block, behind a pimpl

 private:
  std::unique_ptr<Model> model_;
};

}  // namespace irdma_sim::rtl
