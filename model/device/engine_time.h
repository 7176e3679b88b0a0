// The device engine's notion of time: cycles on its clock, run ahead of the SystemC
// kernel by at most one quantum (TLM-2.0 temporal decoupling). A zero quantum makes the
// engine wait at every step: the timing-accurate mode.
#pragma once

#include <cstdint>

#include <systemc>
#include <tlm_utils/tlm_quantumkeeper.h>

namespace irdma_sim::device {

class EngineTime {
 public:
  EngineTime(double clock_mhz, sc_core::sc_time quantum)
      : period_(1e6 / clock_mhz, sc_core::SC_PS) {
    tlm_utils::tlm_quantumkeeper::set_global_quantum(quantum);
    qk_.reset();
  }

  void cycles(uint32_t n) { advance(period_ * double(n)); }
  void advance(const sc_core::sc_time& t) {
    qk_.inc(t);
    if (qk_.need_sync()) qk_.sync();
  }
  // Local offset to annotate on a transaction, and the offset it comes back with.
  sc_core::sc_time local() const { return qk_.get_local_time(); }
  void set_local(const sc_core::sc_time& t) {
    qk_.set(t);
    if (qk_.need_sync()) qk_.sync();
  }
  void sync() { qk_.sync(); }
  uint64_t now_ps() const { return (sc_core::sc_time_stamp() + qk_.get_local_time()).value(); }
  const sc_core::sc_time& period() const { return period_; }

 private:
  sc_core::sc_time period_;
  tlm_utils::tlm_quantumkeeper qk_;
};

}  // namespace irdma_sim::device
