// libFuzzer target: the scenario loader over any text. A malformed scenario must be a
// ScenarioError naming the file (and, where there is one, the line); any other exception,
// a crash or a sanitizer report is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include "model/testbench/scenario.h"
#include "model/testbench/yaml_reader.h"
#include "tests/fuzz/fuzz_input.h"

// libsystemc wants an sc_main from every program it links into (the scenario's configuration
// names SystemC types); this one never starts the kernel.
int sc_main(int, char**) { return 1; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // One file per process, gone when it ends.
  static const std::string path = [] {
    static std::string p = (std::filesystem::temp_directory_path() /
                            ("irdma-sim-fuzz-scenario-" + std::to_string(::getpid()) + ".yaml"))
                               .string();
    std::atexit([] { std::remove(p.c_str()); });
    return p;
  }();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
    // Unwritten, every input would be the loader's "cannot open": nothing tested.
    if (!out.flush()) irdma_sim::fuzz::broken("fuzz_scenario", "cannot write " + path);
  }
  try {
    irdma_sim::testbench::load_scenario(path);
  } catch (const irdma_sim::testbench::ScenarioError& e) {
    if (std::string(e.what()).find(path) == std::string::npos)
      irdma_sim::fuzz::broken("fuzz_scenario", std::string("an error that does not name the file: ") + e.what());
  } catch (const std::exception& e) {
    irdma_sim::fuzz::broken("fuzz_scenario", std::string("not a ScenarioError: ") + e.what());
  }
  return 0;
}
