// What must hold of the whole system at the end of a run, beyond the scoreboard's checks of
// each completion: the counters read once after teardown, the checks made of them, and the
// warnings for what the scenario asked that the device or the run never did.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "driver/backends/device_backdoor.h"
#include "driver/core/cq_poll.h"
#include "driver/irdma/irdma_device.h"
#include "model/testbench/backend.h"
#include "model/testbench/host.h"
#include "model/testbench/scenario.h"
#include "model/testbench/scoreboard.h"
#include "model/testbench/workload.h"

namespace irdma_sim::testbench {

// The system's counters after teardown, taken once: the checks and the report read them,
// and a backend in another process may be gone by the time the report is written.
struct SystemCounters {
  uint64_t now_ps = 0;
  HostCounters host;
  std::optional<backends::DeviceCounters> device;  // where the backend has a backdoor
  irdma::irdma_event_counters events;
  ibcore::ib_poll_counters polls;
  uint64_t trace_events = 0;
  uint64_t late_trace_events = 0;
  uint32_t eq_watchdog_us = 0;  // the driver's watchdog period, for the checks
};

// Reads them off `host`. `server`: the process serving the device, if the run started one;
// when it has gone, the error says how.
SystemCounters read_system_counters(Host& host, ServerProcess* server);

// What holds of the whole system after teardown: the host's view always, the device's own
// counters where the backend offers a backdoor to read them.
void system_checks(const SystemCounters& sys, const WorkloadCounters& wl, Scoreboard& sb);

// A fault the scenario asks for that never struck tested nothing: said, as a request
// fault's rate that drew no request is.
void warn_of_idle_faults(const SimConfig& cfg, const backends::DeviceCounters& c, const HostCounters& h,
                         std::vector<std::string>& warnings);

// What the scenario asks of the device that the device, as the driver found it at probe,
// does not offer: warnings, and a ScenarioError where the scenario cannot mean anything
// there (another generation: its CQE layout, opcodes and atomics are another device's).
// `elsewhere`: the device was not built from this scenario (a served model, silicon).
std::vector<std::string> device_mismatches(const Scenario& sc, const irdma::irdma_device& dev, bool elsewhere);

}  // namespace irdma_sim::testbench
