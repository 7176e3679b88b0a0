#include "model/testbench/run_progress.h"

#include <cstdio>

namespace irdma_sim::testbench {

std::string RunProgress::line() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "simulated %.3f ms, %llu completions (%.2f M/s), %.0f%% of sends posted, %.1f s wall",
                double(sim_time_ps) / 1e9, static_cast<unsigned long long>(completions),
                wall_s > 0 ? double(completions) / wall_s / 1e6 : 0.0,
                sends_total ? 100.0 * double(sends_posted) / double(sends_total) : 100.0, wall_s);
  return buf;
}

}  // namespace irdma_sim::testbench
