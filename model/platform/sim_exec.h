// hal::Exec on SystemC: the driver's threads are SystemC threads of simulated host CPUs and
// its time is simulated time. A spinning CPU can only see memory change, so cpu_relax()
// sleeps until the device next writes host memory (as monitor/mwait would), or until
// `relax_timeout_ns` passes for loops that wait on time instead. Wherever one of its
// threads resumes, the device's posted writes that have arrived by then land first.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <systemc>

#include "driver/hal/exec.h"
#include "model/platform/host_config.h"
#include "model/platform/host_memory.h"

namespace irdma_sim::platform {

class SimExec final : public hal::Exec {
 public:
  // `softirqs_at_irq_exit`: the softirqs an interrupt raises run as its handler returns
  // (Linux's irq_exit), not in ksoftirqd.
  SimExec(const HostConfig& cfg, HostMemory& memory, bool softirqs_at_irq_exit)
      : cfg_(cfg), memory_(memory), softirqs_at_irq_exit_(softirqs_at_irq_exit) {}

  uint64_t now_ns() override;
  void cpu_relax() override;
  void delay_ns(uint64_t ns) override;
  void spawn(const std::string& name, unsigned cpu, std::function<void()> body) override;
  std::unique_ptr<hal::Event> make_event() override;
  std::unique_ptr<hal::Lock> make_lock() override;
  unsigned num_cpus() const override { return cfg_.cpus; }
  bool softirqs_at_irq_exit() const override { return softirqs_at_irq_exit_; }

 private:
  HostConfig cfg_;
  HostMemory& memory_;
  bool softirqs_at_irq_exit_;
};

}  // namespace irdma_sim::platform
