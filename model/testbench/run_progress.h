// How far a scenario run has come, as a long run reports it while the traffic flows.
#pragma once

#include <cstdint>
#include <string>

namespace irdma_sim::testbench {

struct RunProgress {
  uint64_t sim_time_ps = 0;
  uint64_t completions = 0;
  uint64_t sends_posted = 0;
  uint64_t sends_total = 0;  // of the whole scenario
  double wall_s = 0;

  // One line for a terminal: simulated time, completions and their rate, sends posted.
  std::string line() const;
};

}  // namespace irdma_sim::testbench
