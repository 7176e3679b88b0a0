// One scenario run, start to finish, on any backend: load, drive the device, check, and
// write the run's outputs (report.json, trace.bin, completions.jsonl) to a directory, as
// the run goes. Plain C++ over the driver: with make_pcie_backend, a run on silicon links
// no simulator.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/device/device_config.h"
#include "model/testbench/backend.h"
#include "model/testbench/run_progress.h"
#include "model/testbench/scoreboard.h"
#include "model/trace/trace_log.h"

namespace irdma_sim::testbench {

struct RunOptions {
  std::optional<uint64_t> seed;  // overrides the scenario's
  bool trace = true;             // write the device's transaction log
  trace::TraceLog::Format trace_format = trace::TraceLog::Format::binary;  // trace.bin, or trace.jsonl
  // Write what a replay needs: stimulus.jsonl and the scenario as scenario.yaml (sim only).
  bool record = false;
  // Where the device is: "sim" (simulated in this process), "vfio-user" (the model served
  // by a child process, the driver on this process's threads), "vfio-user:PATH" (a device
  // served at PATH already; no trace: the server keeps its own) or "vfio:DDDD:BB:DD.F"
  // (a function bound to vfio-pci: silicon, no trace and no backdoor).
  std::string backend = "sim";
  // In place of the scenario's device.cq_writer and device.cq_writer_timing.
  std::optional<device::CqWriterKind> cq_writer;
  std::optional<device::CqWriterTiming> cq_writer_timing;
  // Called about twice a second of wall time while the traffic runs.
  std::function<void(const RunProgress&)> progress;
};

// Puts a command line's CQ writer (and timing) in place of the device's; throws ScenarioError,
// naming `file`, when that leaves a setting of the scenario's unused (unused_rtl_setting).
void override_cq_writer(device::DeviceConfig& d, std::optional<device::CqWriterKind> kind,
                        std::optional<device::CqWriterTiming> timing, const std::string& file);

// The CQ writer a command line names: "tlm", "rtl" (the RTL's cycles feed the clock) or
// "rtl:model" (the stage costs do), into the options' fields; std::invalid_argument else.
void choose_cq_writer(const std::string& choice, std::optional<device::CqWriterKind>& kind,
                      std::optional<device::CqWriterTiming>& timing);

struct RunResult {
  bool passed = false;
  int interrupted_by = 0;  // the signal that cut the traffic short, or 0
  std::string report_path;
  std::vector<Check> failed;  // the checks that did not hold, as the report has them
};

// `make_backend` makes the device RunOptions::backend names. Throws ScenarioError for a
// malformed scenario, std::invalid_argument for an unknown backend, and std::runtime_error when the outputs cannot be written or the system cannot
// run; check failures are in the report.
// SIGINT and SIGTERM during the run stop the traffic: everything is torn down, the
// outputs are completed and the report says the run was interrupted (a second SIGINT
// kills the process as usual).
RunResult run_scenario(const std::string& scenario_path, const std::string& out_dir, const RunOptions& options,
                       const BackendFactory& make_backend);

}  // namespace irdma_sim::testbench
