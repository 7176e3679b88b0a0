// irdma-sim-serve --socket PATH [--config FILE] [--trace FILE] [--once] [--no-backdoor]
// Serves the device model as a PCIe function over vfio-user at PATH until SIGINT or
// SIGTERM (or, with --once, until its first client leaves); --no-backdoor offers no test
// hooks, as silicon does. FILE is a scenario, whose
// config: section describes the device, or such a section alone. Exit status: 0 done,
// 2 bad usage, a configuration it cannot serve or a socket it cannot have (another server
// listens there), 3 the server failed.
#include <iostream>
#include <string>

#include <systemc>

#include "model/testbench/run_command.h"
#include "model/testbench/scenario.h"
#include "model/system/served_device.h"
#include "model/testbench/yaml_reader.h"

namespace {

constexpr const char* kUsage =
    "usage: irdma-sim-serve --socket PATH [--config FILE] [--trace FILE] [--once] [--no-backdoor] [--version]";

}  // namespace

int sc_main(int argc, char** argv) {
  std::string socket, config;
  irdma_sim::system::ServeOptions options;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--version") {
      std::cout << "irdma-sim-serve " IRDMA_SIM_VERSION "\n";
      return 0;
    } else if (a == "--socket" || a == "--config" || a == "--trace") {
      if (!has_value) return irdma_sim::testbench::usage_error("irdma-sim-serve", kUsage, a + " needs a path");
      (a == "--socket" ? socket : a == "--config" ? config : options.trace_path) = argv[++i];
    } else if (a == "--once") {
      options.serve_next_client = false;
    } else if (a == "--no-backdoor") {
      options.backdoor = false;
    } else {
      return irdma_sim::testbench::usage_error("irdma-sim-serve", kUsage, "unexpected argument '" + a + "'");
    }
  }
  if (socket.empty())
    return irdma_sim::testbench::usage_error("irdma-sim-serve", kUsage, "no socket given (--socket PATH)");
  try {
    const irdma_sim::testbench::SimConfig cfg =
        config.empty() ? irdma_sim::testbench::SimConfig{} : irdma_sim::testbench::load_config_file(config);
    irdma_sim::system::serve_device(cfg, socket, options,
                                    [&] { std::cerr << "irdma-sim-serve: serving at " << socket << std::endl; });
    return 0;
  } catch (const irdma_sim::testbench::ScenarioError& e) {
    std::cerr << "irdma-sim-serve: " << e.what() << "\n";
    return 2;
  } catch (const irdma_sim::system::ServeRefused& e) {
    std::cerr << "irdma-sim-serve: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "irdma-sim-serve: " << e.what() << "\n";
    return 3;
  }
}
