#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "model/platform/sim_exec.h"

namespace irdma_sim::platform {

using sc_core::sc_time;
using sc_core::SC_NS;

namespace {

class SimEvent final : public hal::Event {
 public:
  void signal() override {
    pending_ = true;
    ev_.notify(sc_core::SC_ZERO_TIME);
  }
  void wait() override {
    while (!pending_) sc_core::wait(ev_);
    pending_ = false;
  }
  bool wait_for(uint64_t timeout_ns) override {
    const sc_time deadline = sc_core::sc_time_stamp() + sc_time(double(timeout_ns), SC_NS);
    while (!pending_) {
      const sc_time now = sc_core::sc_time_stamp();
      if (now >= deadline) return false;
      sc_core::wait(deadline - now, ev_);
    }
    pending_ = false;
    return true;
  }

 private:
  sc_core::sc_event ev_;
  bool pending_ = false;
};

// Threads of one simulated host interleave only where they wait, so the lock only has to
// exclude holders across waits.
class SimLock final : public hal::Lock {
 public:
  void lock() override {
    while (held_) sc_core::wait(released_);
    held_ = true;
  }
  void unlock() override {
    held_ = false;
    released_.notify(sc_core::SC_ZERO_TIME);
  }

 private:
  sc_core::sc_event released_;
  bool held_ = false;
};

}  // namespace

uint64_t SimExec::now_ns() { return uint64_t(sc_core::sc_time_stamp().to_seconds() * 1e9); }

void SimExec::cpu_relax() {
  sc_core::wait(sc_time(cfg_.relax_timeout_ns, SC_NS), memory_written_);
}

void SimExec::delay_ns(uint64_t ns) { sc_core::wait(sc_time(double(ns), SC_NS)); }

void SimExec::spawn(const std::string& name, unsigned, std::function<void()> body) {
  sc_core::sc_spawn_options opts;
  opts.set_stack_size(int(cfg_.thread_stack));
  sc_core::sc_spawn(std::move(body), name.c_str(), &opts);
}

std::unique_ptr<hal::Event> SimExec::make_event() { return std::make_unique<SimEvent>(); }
std::unique_ptr<hal::Lock> SimExec::make_lock() { return std::make_unique<SimLock>(); }

}  // namespace irdma_sim::platform
