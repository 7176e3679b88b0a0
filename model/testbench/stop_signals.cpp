#include "model/testbench/stop_signals.h"

namespace irdma_sim::testbench {

volatile std::sig_atomic_t StopSignals::caught_ = 0;
void (*StopSignals::on_stop_)() = nullptr;

StopSignals::StopSignals(void (*on_stop)()) {
  caught_ = 0;
  on_stop_ = on_stop;
  struct sigaction sa {};
  sa.sa_handler = [](int sig) {
    if (!caught_) caught_ = sig;
    if (on_stop_) on_stop_();
  };
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, &old_term_);
  sa.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &sa, &old_int_);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  on_stop_ = nullptr;
}

const char* signal_name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal"; }

}  // namespace irdma_sim::testbench
