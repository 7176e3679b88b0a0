// irdma-sim-run SCENARIO --out DIR [--seed N] [--no-trace]
// Runs one scenario in this process and writes its outputs; exit status 0 when every check
// passed, 1 when one failed, 2 for bad usage or a malformed scenario.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>

#include <systemc>  // declares sc_main, which libsystemc's main() calls

#include "model/system/run_scenario.h"
#include "model/system/yaml_reader.h"

int sc_main(int argc, char** argv) {
  std::string scenario, out;
  std::optional<uint64_t> seed;
  bool trace = true;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else if (a == "--seed" && i + 1 < argc) {
      char* end = nullptr;
      seed = std::strtoull(argv[++i], &end, 0);
      if (*end) {
        std::cerr << "irdma-sim-run: --seed needs a number\n";
        return 2;
      }
    } else if (a == "--no-trace") {
      trace = false;
    } else if (scenario.empty() && a[0] != '-') {
      scenario = a;
    } else {
      std::cerr << "usage: irdma-sim-run SCENARIO --out DIR [--seed N] [--no-trace]\n";
      return 2;
    }
  }
  if (scenario.empty() || out.empty()) {
    std::cerr << "usage: irdma-sim-run SCENARIO --out DIR [--seed N] [--no-trace]\n";
    return 2;
  }
  try {
    const auto r = irdma_sim::system::run_scenario(scenario, out, seed, trace);
    std::cout << (r.passed ? "PASSED " : "FAILED ") << r.report_path << "\n";
    return r.passed ? 0 : 1;
  } catch (const irdma_sim::system::ScenarioError& e) {
    std::cerr << "irdma-sim-run: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "irdma-sim-run: " << e.what() << "\n";
    return 3;
  }
}
