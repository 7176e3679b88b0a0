// libFuzzer target: the scenario loader over any text. A malformed scenario must be a
// ScenarioError naming the file (and, where there is one, the line); any other exception,
// a crash or a sanitizer report is a finding.
#include <unistd.h>

#include <cstdint>
#include <exception>
#include <fstream>
#include <string>

#include "model/system/scenario.h"
#include "model/system/yaml_reader.h"
#include "tests/fuzz/fuzz_input.h"

// libsystemc wants an sc_main from every program it links into (the scenario's configuration
// names SystemC types); this one never starts the kernel.
int sc_main(int, char**) { return 1; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/dev/shm/irdma-sim-fuzz-scenario-" + std::to_string(::getpid()) + ".yaml";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  try {
    irdma_sim::system::load_scenario(path);
  } catch (const irdma_sim::system::ScenarioError& e) {
    if (std::string(e.what()).find(path) == std::string::npos)
      irdma_sim::fuzz::broken("fuzz_scenario", std::string("an error that does not name the file: ") + e.what());
  } catch (const std::exception& e) {
    irdma_sim::fuzz::broken("fuzz_scenario", std::string("not a ScenarioError: ") + e.what());
  }
  return 0;
}
