// What every Verilated block of the project needs around its model, so that another block
// costs a module and an adapter: a clock ticked only while the adapter has work for it,
// inputs settled before the edge that samples them, a waveform in simulated time, a cycle
// count, and a watchdog that turns an RTL that stops making progress into an exception
// instead of a hung simulation.
//
// Include only from files that include the Verilator headers first (verilated.h breaks in
// a --cc build when SystemC came before it); adapters keep it behind a pimpl.
#pragma once

#include <verilated.h>
#include <verilated_vcd_c.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace irdma_sim::rtl {

// `Top` is a Verilated module with a `clk` input and an active-low synchronous `rst_n`.
template <typename Top>
class VerilatedBlock {
 public:
  // Far above any of this project's pipeline depths: only a broken RTL stalls this long
  // while its consumer is ready.
  static constexpr unsigned kStallLimitCycles = 64;

  // `name`: the block, for messages. The model is built, not yet reset.
  explicit VerilatedBlock(std::string name) : name_(std::move(name)) {}
  ~VerilatedBlock() {
    if (vcd_) vcd_->close();
    top_.final();
  }
  VerilatedBlock(const VerilatedBlock&) = delete;
  VerilatedBlock& operator=(const VerilatedBlock&) = delete;

  Top& top() { return top_; }
  VerilatedContext& context() { return context_; }

  // `edges` synchronous reset edges (a block that clears a store holds reset longer) with
  // the inputs `idle` drives (valids low), then rst_n high.
  template <typename DriveIdle>
  void reset(DriveIdle idle, unsigned edges = 1) {
    top_.clk = 0;
    top_.rst_n = 0;
    idle(top_);
    for (unsigned i = 0; i < edges; i++) edge();
    top_.rst_n = 1;
  }

  // One clock period, counted.
  void tick() {
    edge();
    ++cycles_;
  }
  uint64_t cycles() const { return cycles_; }

  // After a cycle's handshakes are known (before tick): `progressed` when a transfer
  // happened, `waiting` when work is pending and the consumer was ready. Throws
  // std::runtime_error after kStallLimitCycles waiting cycles without progress.
  void watch(bool progressed, bool waiting) {
    if (progressed)
      stuck_ = 0;
    else if (waiting && ++stuck_ > kStallLimitCycles)
      throw std::runtime_error(name_ + ": made no progress for " + std::to_string(stuck_) + " cycles");
  }

  // Dumps every following edge to a VCD at `path` (closed on destruction), in picoseconds,
  // a clock period being `period_ps`. Once per block (std::logic_error on a second call);
  // throws std::runtime_error when the file cannot be written.
  void enable_vcd(const std::string& path, uint64_t period_ps) {
    if (vcd_) throw std::logic_error(name_ + ": VCD already enabled");
    context_.traceEverOn(true);
    context_.timeunit(-12);  // ps: timestamps are simulated time
    context_.timeprecision(-12);
    auto vcd = std::make_unique<VerilatedVcdC>();
    top_.trace(vcd.get(), 99);
    vcd->open(path.c_str());
    if (!vcd->isOpen()) throw std::runtime_error(name_ + ": cannot write the VCD " + path);
    vcd_ = std::move(vcd);
    half_period_ps_ = period_ps > 1 ? period_ps / 2 : 1;
  }
  // The waveform's clock jumps to `t_ps` when it is behind: what comes next starts no
  // earlier than the engine's time, so the VCD lines up with the transaction log.
  void at_time_ps(uint64_t t_ps) {
    if (vcd_ && t_ps > context_.time()) context_.time(t_ps);
  }

 private:
  // The falling half comes first so that inputs driven since the last edge settle (and
  // show in a trace) before the rising edge samples them.
  void edge() {
    top_.clk = 0;
    settle();
    top_.clk = 1;
    settle();
  }
  void settle() {
    top_.eval();
    if (vcd_) {
      vcd_->dump(context_.time());
      context_.timeInc(half_period_ps_);
    }
  }

  std::string name_;
  VerilatedContext context_;
  Top top_{&context_};
  std::unique_ptr<VerilatedVcdC> vcd_;
  uint64_t half_period_ps_ = 1;
  uint64_t cycles_ = 0;
  unsigned stuck_ = 0;
};

}  // namespace irdma_sim::rtl
