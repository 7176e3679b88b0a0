// Verilator headers first, even before this file's own header: verilated.h breaks in a
// --cc build if anything included SystemC before it (it then calls an undeclared
// sc_time_stamp()), and this file must stay valid whatever the project headers include.
#include <verilated.h>
#include <verilated_vcd_c.h>

#include "Vcqe_formatter.h"

#include "rtl_bridge/rtl_cqe_formatter.h"

#include <stdexcept>
#include <string>

namespace irdma_sim::rtl {

using device::CqeFields;
using device::CqeHalf;

// Far above the pipeline depth: only a broken RTL stalls this long with its consumer ready.
constexpr unsigned kStallLimitCycles = 64;

struct RtlCqeFormatter::Model {
  VerilatedContext context;
  Vcqe_formatter top{&context};
  std::unique_ptr<VerilatedVcdC> vcd;
  uint64_t half_period_ps = 1;
  uint64_t cycles = 0;
  uint64_t last_latency = 0;

  Model() {
    top.clk = 0;
    top.rst_n = 0;
    top.in_valid = 0;
    top.out_ready = 0;
    edge();  // synchronous reset
    top.rst_n = 1;
  }

  ~Model() {
    if (vcd) vcd->close();
    top.final();
  }

  // One clock period. The falling half comes first so that inputs driven since the last
  // edge settle (and show in a trace) before the rising edge samples them.
  void edge() {
    top.clk = 0;
    settle();
    top.clk = 1;
    settle();
  }

  void settle() {
    top.eval();
    if (vcd) {
      vcd->dump(context.time());
      context.timeInc(half_period_ps);
    }
  }

  // Ports are exactly as wide as the hardware fields; Verilator expects unused high bits
  // of a port's C type to be zero, so the C++ fields are cut to width here.
  void drive(const CqeFields& f, bool polarity, bool half) {
    top.payload_len = f.payload_len;
    top.tcp_seq_rtt = f.tcp_seq_rtt;
    top.qp_ctx = f.qp_ctx;
    top.stag_or_src_qpn = f.stag_or_src_qpn;
    top.qp_id = f.qp_id & 0xFFFFFFu;
    top.minor = f.minor_err;
    top.major = f.major_err;
    top.wqe_idx = f.wqe_idx & 0x7FFFu;
    top.push_dropped = f.push_dropped;
    top.stag_or_ipv4 = f.stag_or_ipv4;
    top.solicited = f.solicited;
    top.error = f.error;
    top.op = f.op & 0x3Fu;
    top.sq = f.sq;
    top.extended = f.extended;
    top.imm_data = f.imm_data;
    top.ud_smac = f.ud_smac & 0xFFFF'FFFF'FFFFull;
    top.ud_vlan = f.ud_vlan;
    top.vlan_valid = f.vlan_valid;
    top.smac_valid = f.smac_valid;
    top.imm_valid = f.imm_valid;
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
    unsigned stuck_cycles = 0;
    const uint64_t start = cycles;
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
      // With work pending, a ready consumer must see progress within the pipeline depth;
      // cycles it spends stalling do not count. A broken RTL must not hang the simulation.
      if (in_fire || out_fire) {
        stuck_cycles = 0;
      } else if (top.out_ready && (offering || sent > received)) {
        ++stuck_cycles;
      }
      if (stuck_cycles > kStallLimitCycles) {
        throw std::runtime_error("RtlCqeFormatter: pipeline made no progress for " +
                                 std::to_string(stuck_cycles) + " cycles");
      }
      edge();
      ++cycles;
      if (in_fire) {
        ++sent;
        offering = false;
      }
    }
    top.in_valid = 0;
    last_latency = cycles - start;
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

uint64_t RtlCqeFormatter::cycles() const { return model_->cycles; }

uint64_t RtlCqeFormatter::last_latency_cycles() const { return model_->last_latency; }

void RtlCqeFormatter::enable_vcd(const std::string& path, uint64_t period_ps) {
  Model& m = *model_;
  // A model attaches to one trace file for its lifetime.
  if (m.vcd) throw std::logic_error("RtlCqeFormatter: VCD already enabled");
  m.context.traceEverOn(true);
  m.context.timeunit(-12);  // ps: timestamps are simulated time
  m.context.timeprecision(-12);
  auto vcd = std::make_unique<VerilatedVcdC>();
  m.top.trace(vcd.get(), 99);
  vcd->open(path.c_str());
  if (!vcd->isOpen()) throw std::runtime_error("device.rtl_vcd: cannot write " + path);
  m.vcd = std::move(vcd);
  m.half_period_ps = period_ps > 1 ? period_ps / 2 : 1;
}

void RtlCqeFormatter::at_time_ps(uint64_t t_ps) {
  Model& m = *model_;
  if (m.vcd && t_ps > m.context.time()) m.context.time(t_ps);
}

}  // namespace irdma_sim::rtl
