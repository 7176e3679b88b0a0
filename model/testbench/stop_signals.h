// SIGINT and SIGTERM, caught for as long as a StopSignals lives: the first is noted and
// `on_stop` (which must be async-signal-safe) is called for each. A second SIGINT (Ctrl-C
// again) takes its default action; SIGTERM may come more than once (a parent's death
// signal comes as each of its threads exits). One at a time per process.
#pragma once

#include <csignal>

namespace irdma_sim::testbench {

class StopSignals {
 public:
  explicit StopSignals(void (*on_stop)() = nullptr);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  // The first signal caught, or 0.
  int caught() const { return caught_; }

 private:
  static volatile std::sig_atomic_t caught_;
  static void (*on_stop_)();
  struct sigaction old_int_ {}, old_term_ {};
};

const char* signal_name(int sig);

}  // namespace irdma_sim::testbench
