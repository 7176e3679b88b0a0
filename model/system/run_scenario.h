// One scenario run, start to finish: load, simulate, check, and write the run's outputs
// (report.json, trace.jsonl, completions.jsonl) to a directory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace irdma_sim::system {

struct RunResult {
  bool passed = false;
  std::string report_path;
};

// Throws ScenarioError for a malformed scenario and std::runtime_error when the outputs
// cannot be written or the simulation cannot run; check failures are in the report.
RunResult run_scenario(const std::string& scenario_path, const std::string& out_dir,
                       std::optional<uint64_t> seed = std::nullopt, bool trace = true);

}  // namespace irdma_sim::system
