// Whole-system throughput, one elaboration per process:
//   irdma-sim-bench e2e approximate|loose [SENDS_PER_QP] [MAX_BYTES]
// runs the smoke scenario's topology with tracing off and prints completions per
// wall-clock second (device writes, driver polls, scoreboard checks, payloads compared).
// Messages are 1..MAX_BYTES (default 64): the figure is about completions, not bytes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <systemc>

#include "model/system/completion_log.h"
#include "model/system/scenario.h"
#include "model/system/scoreboard.h"
#include "model/system/simulation.h"
#include "model/system/workload.h"

using namespace irdma_sim::system;

int sc_main(int argc, char** argv) {
  if (argc < 3 || std::strcmp(argv[1], "e2e") != 0) {
    std::fprintf(stderr, "usage: irdma-sim-bench e2e approximate|loose [SENDS_PER_QP] [MAX_BYTES]\n");
    return 2;
  }
  Scenario sc = load_scenario(IRDMA_SIM_SOURCE_DIR "/scenarios/smoke.yaml");
  sc.config.sync = std::strcmp(argv[2], "loose") == 0 ? SyncMode::loose : SyncMode::approximate;
  sc.traffic.sends_per_qp = argc > 3 ? uint32_t(std::strtoul(argv[3], nullptr, 0)) : 200000;
  sc.traffic.max_bytes = argc > 4 ? uint32_t(std::strtoul(argv[4], nullptr, 0)) : 64;
  sc.traffic.min_bytes = std::min(sc.traffic.min_bytes, sc.traffic.max_bytes);

  Simulation sim(sc.config);
  CompletionLog no_log;
  Scoreboard sb(2 * sc.pairs.size());
  Workload wl(sim, sc, sb, no_log);
  const auto start = std::chrono::steady_clock::now();
  sim.run_on_host([&] { wl.run(); });
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  bool passed = true;
  for (const Check& c : sb.checks()) passed = passed && c.passed;
  const uint64_t n = wl.counters().completions;
  std::printf("e2e %-11s completions=%llu wall_s=%.3f completions_per_second=%.0f sim_us=%.1f checks=%s\n",
              argv[2], (unsigned long long)n, wall, double(n) / wall, sim.now_ps() / 1e6,
              passed ? "passed" : "FAILED");
  return passed ? 0 : 1;
}
