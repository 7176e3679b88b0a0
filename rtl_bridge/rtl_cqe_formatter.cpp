// Verilator headers first, even before this file's own header: verilated.h breaks in a
// --cc build if anything included SystemC before it (it then calls an undeclared
// sc_time_stamp()), and this file must stay valid whatever the project headers include.
#include <verilated.h>
#include <verilated_vcd_c.h>

#include "Vcqe_formatter.h"

#include "rtl_bridge/cqe_ports.h"
#include "rtl_bridge/rtl_cqe_formatter.h"
#include "rtl_bridge/verilated_block.h"

#include <string>

namespace irdma_sim::rtl {

using device::CqeFields;
using device::CqeHalf;

struct RtlCqeFormatter::Model {
  VerilatedBlock<Vcqe_formatter> block{"RtlCqeFormatter"};
  Vcqe_formatter& top = block.top();
  uint64_t last_latency = 0;

  Model() {
    block.reset([](Vcqe_formatter& t) {
      t.in_valid = 0;
      t.out_ready = 0;
    });
  }

  void drive(const CqeFields& f, bool polarity, bool half) {
    drive_cqe_fields(top, f);
    top.polarity = polarity;
    top.half = half;
  }

  CqeHalf output() const { return {top.q0, top.q1, top.q2, top.q3}; }

  // Runs n requests through the pipeline. in_ready, out_valid and q0..q3 are flops, so
  // the values read before an edge are the ones that edge samples.
  template <typename OfferInput, typename AcceptOutput>
  void stream(const CqeFields* in, const bool* polarity, const bool* half, size_t n,
              CqeHalf* out, OfferInput offer_input, AcceptOutput accept_output) {
    size_t sent = 0;
    size_t received = 0;
    bool offering = false;
    const uint64_t start = block.cycles();
    while (received < n) {
      if (!offering && sent < n && offer_input()) {
        drive(in[sent], polarity[sent], half[sent]);
        offering = true;
      }
      top.in_valid = offering;
      top.out_ready = accept_output();
      const bool in_fire = offering && top.in_ready;
      const bool out_fire = top.out_valid && top.out_ready;
      if (out_fire) out[received++] = output();
      // Work pending and a ready consumer: the pipeline must move; cycles the consumer
      // spends stalling do not count.
      block.watch(in_fire || out_fire, top.out_ready && (offering || sent > received));
      block.tick();
      if (in_fire) {
        ++sent;
        offering = false;
      }
    }
    top.in_valid = 0;
    last_latency = block.cycles() - start;
  }

  CqeHalf format_one(const CqeFields& f, bool polarity, bool half) {
    CqeHalf result;
    const auto always = [] { return true; };
    stream(&f, &polarity, &half, 1, &result, always, always);
    return result;
  }
};

RtlCqeFormatter::RtlCqeFormatter() : model_(std::make_unique<Model>()) {}

RtlCqeFormatter::~RtlCqeFormatter() = default;

CqeHalf RtlCqeFormatter::format_main(const CqeFields& f, bool polarity) {
  return model_->format_one(f, polarity, false);
}

CqeHalf RtlCqeFormatter::format_ext(const CqeFields& f, bool polarity) {
  return model_->format_one(f, polarity, true);
}

void RtlCqeFormatter::format_batch(const CqeFields* in, const bool* polarity, const bool* half,
                                   size_t n, CqeHalf* out) {
  const auto always = [] { return true; };
  model_->stream(in, polarity, half, n, out, always, always);
}

void RtlCqeFormatter::format_throttled(const CqeFields* in, const bool* polarity,
                                       const bool* half, size_t n, CqeHalf* out,
                                       const Throttle& throttle) {
  model_->stream(in, polarity, half, n, out, throttle.offer_input, throttle.accept_output);
}

uint64_t RtlCqeFormatter::cycles() const { return model_->block.cycles(); }

uint64_t RtlCqeFormatter::last_latency_cycles() const { return model_->last_latency; }

void RtlCqeFormatter::enable_vcd(const std::string& path, uint64_t period_ps) {
  model_->block.enable_vcd(path, period_ps);
}

void RtlCqeFormatter::at_time_ps(uint64_t t_ps) { model_->block.at_time_ps(t_ps); }

}  // namespace irdma_sim::rtl
