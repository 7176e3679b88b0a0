// hal::Exec on the host OS, for the driver on real silicon: OS threads, the
// monotonic clock, futex-backed locks and condition variables. Spawned threads are joined
// when the OsExec goes, so their bodies must return by then.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "driver/hal/exec.h"

namespace backends {

class OsExec final : public hal::Exec {
 public:
  OsExec();
  ~OsExec() override;

  uint64_t now_ns() override;
  void cpu_relax() override;
  void delay_ns(uint64_t ns) override;
  void spawn(const std::string& name, unsigned cpu, std::function<void()> body) override;
  std::unique_ptr<hal::Event> make_event() override;
  std::unique_ptr<hal::Lock> make_lock() override;
  unsigned num_cpus() const override { return cpus_; }

 private:
  unsigned cpus_;
  std::mutex threads_lock_;
  std::vector<std::thread> threads_;
};

}  // namespace backends
