// A scenario run on any backend, the simulator's among them: "sim" (the device simulated in
// this process) and "vfio-user" (the model served by a child process of the run's own), on
// top of the test bench's (run_loop.h).
#pragma once

#include <string>

#include "model/testbench/backend.h"
#include "model/testbench/run_loop.h"

namespace irdma_sim::system {

// Every backend RunOptions::backend may name.
testbench::Backend make_backend(const testbench::SimConfig& cfg, const std::string& name, const std::string& trace_path,
                     const std::string& stimulus_path);

// Throws ScenarioError for a malformed scenario, std::invalid_argument for an unknown
// backend, and std::runtime_error when the outputs cannot be written or the system cannot
// run; check failures are in the report.
// SIGINT and SIGTERM during the run stop the traffic: everything is torn down, the
// outputs are completed and the report says the run was interrupted (a second SIGINT
// kills the process as usual).
testbench::RunResult run_scenario(const std::string& scenario_path, const std::string& out_dir,
                                  const testbench::RunOptions& options = {});

}  // namespace irdma_sim::system
