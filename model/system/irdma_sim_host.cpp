// irdma-sim-host --socket PATH --sysfs DIR [--config FILE] [--out OUT]
// The device host: simulates the device, probes the driver on it and serves its uverbs to
// every application that opens it through the shim, until SIGINT or SIGTERM. DIR receives
// the sysfs tree applications are pointed at (SYSFS_PATH). FILE is a scenario, whose
// config: section describes the device, or such a section alone. OUT receives the device's
// transaction log as it goes (trace.bin, as a scenario run's) and, when it stops,
// report.json (what it served and what the device counted) and coverage.json (the device's
// functional coverage, as a scenario run's). Prints "ready" once it
// listens. Exit status: 0 done, 2 bad usage or a configuration it cannot use, 3 it failed.
#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>

#include <systemc>

#include "model/system/device_host.h"
#include "model/system/simulation.h"
#include "model/system/uverbs_sysfs.h"
#include "model/testbench/coverage_report.h"
#include "model/testbench/run_report.h"
#include "model/testbench/run_command.h"
#include "model/testbench/scenario.h"
#include "model/testbench/stop_signals.h"
#include "model/testbench/yaml_reader.h"

namespace {

constexpr const char* kUsage =
    "usage: irdma-sim-host --socket PATH --sysfs DIR [--config FILE] [--out OUT] [--version]";

}  // namespace

int sc_main(int argc, char** argv) {
  using namespace irdma_sim;
  std::string socket, sysfs, config, out;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--version") {
      std::cout << "irdma-sim-host " IRDMA_SIM_VERSION "\n";
      return 0;
    } else if (a == "-h" || a == "--help") {
      std::cout << kUsage << "\n";
      return 0;
    } else if (a == "--socket" || a == "--sysfs" || a == "--config" || a == "--out") {
      if (i + 1 >= argc) return irdma_sim::testbench::usage_error("irdma-sim-host", kUsage, a + " needs a path");
      (a == "--socket" ? socket : a == "--sysfs" ? sysfs : a == "--config" ? config : out) = argv[++i];
    } else {
      return irdma_sim::testbench::usage_error("irdma-sim-host", kUsage, "unexpected argument '" + a + "'");
    }
  }
  if (socket.empty() || sysfs.empty())
    return irdma_sim::testbench::usage_error("irdma-sim-host", kUsage, "--socket and --sysfs are needed");
  try {
    testbench::SimConfig cfg = config.empty() ? testbench::SimConfig{} : testbench::load_config_file(config);
    // rdma-core's UD consumers read their payload after the GRH a RoCE device writes.
    if (!cfg.device.ud_grh) cfg.device.ud_grh = true;
    if (!out.empty()) std::filesystem::create_directories(out);
    const auto wall_start = std::chrono::steady_clock::now();
    system::Simulation sim(cfg, out.empty() ? "" : out + "/trace.bin");
    sim.run_on_host([&] { system::write_uverbs_sysfs(sysfs, sim.driver(), "irdma0"); });
    const testbench::StopSignals signals;
    system::DeviceHost host(sim, socket);
    std::cout << "ready" << std::endl;
    host.serve([&] { return signals.caught() != 0; });
    if (!out.empty()) {
      sim.close_trace();
      const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - wall_start;
      testbench::write_whole(out + "/report.json",
                             system::device_host_report(host.served(), testbench::read_system_counters(sim, nullptr),
                                                        wall.count()));
      testbench::write_whole(out + "/coverage.json", testbench::coverage_json(sim.trace()->coverage(), true) + "\n");
    }
  } catch (const testbench::ScenarioError& e) {
    std::cerr << "irdma-sim-host: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "irdma-sim-host: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
