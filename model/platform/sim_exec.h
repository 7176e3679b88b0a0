// hal::Exec on SystemC: the driver's threads are SystemC threads of simulated host CPUs,
// its time is simulated time, and a busy-poll iteration costs `poll_ns` of it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <systemc>

#include "driver/hal/exec.h"

namespace irdma_sim::platform {

struct HostConfig {
  unsigned cpus = 1;
  double poll_ns = 20;           // one cpu_relax() iteration
  size_t thread_stack = 1 << 20; // driver code is not written for coroutine-sized stacks
};

class SimExec final : public hal::Exec {
 public:
  explicit SimExec(const HostConfig& cfg) : cfg_(cfg) {}

  uint64_t now_ns() override;
  void cpu_relax() override;
  void delay_ns(uint64_t ns) override;
  void spawn(const std::string& name, unsigned cpu, std::function<void()> body) override;
  std::unique_ptr<hal::Event> make_event() override;
  std::unique_ptr<hal::Lock> make_lock() override;
  unsigned num_cpus() const override { return cfg_.cpus; }
  uint64_t relax_count() const { return relaxes_; }

 private:
  HostConfig cfg_;
  uint64_t relaxes_ = 0;
};

}  // namespace irdma_sim::platform
