// CqeFormatter backed by the Verilated RTL (rtl/cqe_formatter.v). Every call runs real
// valid/ready handshakes on the clocked model, so the cycle counts are those of the
// hardware and the device model can turn them into simulated time. The Verilator
// headers stay behind a pimpl: including this file never drags them (or their clash
// with SystemC) into a SystemC translation unit. A pipeline that stops making progress
// while its consumer is ready (an RTL bug) throws std::runtime_error instead of hanging.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "model/device/cqe_format.h"

namespace irdma_sim::rtl {

class RtlCqeFormatter final : public device::CqeFormatter {
 public:
  // Per-cycle gates for stress tests. offer_input is asked only while no request is
  // pending (a raised in_valid stays up until accepted, as the protocol requires);
  // accept_output false holds out_ready low for that cycle.
  struct Throttle {
    std::function<bool()> offer_input;
    std::function<bool()> accept_output;
  };

  RtlCqeFormatter();  // builds and resets the model
  ~RtlCqeFormatter() override;
  RtlCqeFormatter(const RtlCqeFormatter&) = delete;
  RtlCqeFormatter& operator=(const RtlCqeFormatter&) = delete;

  // One request through an idle pipeline: accept edge, then output handshake edge.
  device::CqeHalf format_main(const device::CqeFields& f, bool polarity) override;
  device::CqeHalf format_ext(const device::CqeFields& f, bool polarity) override;

  // Streams n requests back to back (in_valid held while in_ready, out_ready held high);
  // half[i] false = main half, true = ext half. Takes n + 1 cycles.
  void format_batch(const device::CqeFields* in, const bool* polarity, const bool* half,
                    size_t n, device::CqeHalf* out);
  // format_batch with both handshakes gated by `throttle` every cycle.
  void format_throttled(const device::CqeFields* in, const bool* polarity, const bool* half,
                        size_t n, device::CqeHalf* out, const Throttle& throttle);

  // Clock cycles spent on requests since construction (reset excluded).
  uint64_t cycles() const;
  // Cycles the last call took: 2 for format_main/format_ext, the whole stream for a batch.
  uint64_t last_latency_cycles() const;

  // Dumps every following clock edge to a VCD file at `path` (closed on destruction), in
  // picoseconds, a clock period being `period_ps`. At most once per formatter; throws
  // std::runtime_error when the file cannot be written.
  void enable_vcd(const std::string& path, uint64_t period_ps);
  // Requests from now on start no earlier than `t_ps` in the waveform.
  void at_time_ps(uint64_t t_ps) override;

 private:
  struct Model;
  std::unique_ptr<Model> model_;
};

}  // namespace irdma_sim::rtl
