// The device engine's notion of time: cycles on its clock, accumulated ahead of the
// SystemC kernel (TLM-2.0 temporal decoupling) and synchronised where it matters.
//  - accurate: the engine catches up with the kernel before every DMA read (when anything
//    else could run meanwhile), so it reads host memory at the right simulated time; its
//    posted writes are timed by the link.
//  - loose: the engine syncs only when it is a quantum ahead.
#pragma once

#include <cstdint>

#include <systemc>
#include <tlm_utils/tlm_quantumkeeper.h>

namespace irdma_sim::device {

class EngineTime {
 public:
  // A zero quantum selects the accurate policy.
  EngineTime(double clock_mhz, sc_core::sc_time quantum)
      : period_(1e6 / clock_mhz, sc_core::SC_PS), accurate_(quantum == sc_core::SC_ZERO_TIME) {
    tlm_utils::tlm_quantumkeeper::set_global_quantum(quantum);
    qk_.reset();
  }

  void cycles(uint32_t n) { advance(period_ * double(n)); }
  void advance(const sc_core::sc_time& t) {
    qk_.inc(t);
    if (!accurate_ && qk_.need_sync()) qk_.sync();
  }
  // Local offset to annotate on a transaction, and the offset it comes back with.
  sc_core::sc_time local() const { return qk_.get_local_time(); }
  void set_local(const sc_core::sc_time& t) {
    qk_.set(t);
    if (!accurate_ && qk_.need_sync()) qk_.sync();
  }
  // Before the engine observes host memory or lets the host observe its state. The wait is
  // skipped when the engine is alone until its local time: the world it would wake to is
  // the one it sees now, so what it reads and shows is the same, without a context switch.
  void catch_up() {
    if (!accurate_) return;
    // Even with no lead, a sync yields to processes runnable now.
    if (!alone_for(qk_.get_local_time())) qk_.sync();
  }
  void sync() { qk_.sync(); }
  // Sleeps until `ev` or the absolute time `until_ps` (0: no limit) without catching up
  // first, which would cost a wake-up of its own: the engine keeps its absolute time and
  // wakes with whatever part of its lead the kernel has not covered meanwhile.
  void idle_wait(const sc_core::sc_event& ev, uint64_t until_ps = 0) {
    const uint64_t at = now_ps();
    const uint64_t kernel = sc_core::sc_time_stamp().value();
    if (until_ps)
      sc_core::wait(sc_core::sc_time::from_value(until_ps - kernel), ev);
    else
      sc_core::wait(ev);
    const uint64_t woke = sc_core::sc_time_stamp().value();
    qk_.set(sc_core::sc_time::from_value(at > woke ? at - woke : 0));
  }
  // No other process can run within `d` of the kernel's time: none is runnable now and
  // nothing is scheduled until after it.
  static bool alone_for(const sc_core::sc_time& d) {
    return !sc_core::sc_pending_activity_at_current_time() && sc_core::sc_time_to_pending_activity() > d;
  }
  uint64_t now_ps() const { return (sc_core::sc_time_stamp() + qk_.get_local_time()).value(); }
  const sc_core::sc_time& period() const { return period_; }

 private:
  sc_core::sc_time period_;
  bool accurate_;
  tlm_utils::tlm_quantumkeeper qk_;
};

}  // namespace irdma_sim::device
