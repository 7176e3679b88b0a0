// irdma-sim-run-pcie SCENARIO --out DIR --backend vfio-user:SOCKET|vfio:DDDD:BB:DD.F [--seed N] [--no-trace]
//                    [--cq-writer tlm|rtl|rtl:model]
// irdma-sim-run for a device on PCIe alone: a function bound to vfio-pci (silicon), or a
// model served over vfio-user by another process. It links no simulator. Exit statuses as
// irdma-sim-run's (run_command.h).
#include <iostream>
#include <string>

#include "model/testbench/run_command.h"

namespace {

constexpr const char* kProgram = "irdma-sim-run-pcie";
constexpr const char* kUsage =
    "usage: irdma-sim-run-pcie SCENARIO --out DIR --backend vfio-user:SOCKET|vfio:DDDD:BB:DD.F [--seed N] [--no-trace] "
    "[--cq-writer tlm|rtl|rtl:model] [--progress] [--version]";

}  // namespace

int main(int argc, char** argv) {
  using namespace irdma_sim::testbench;
  RunCommand cmd;
  cmd.options.backend.clear();
  std::string error;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--version") {
      std::cout << kProgram << " " IRDMA_SIM_VERSION "\n";
      return 0;
    }
    if (a == "--help" || a == "-h") {
      std::cout << kUsage << "\n";
      return 0;
    }
    if (!take_run_argument(argc, argv, i, cmd, error))
      return usage_error(kProgram, kUsage, "unexpected argument '" + a + "'");
    if (!error.empty()) return usage_error(kProgram, kUsage, error);
  }
  const std::string& backend = cmd.options.backend;
  if (backend.empty()) return usage_error(kProgram, kUsage, "no device given (--backend)");
  if (backend == "sim" || backend == "vfio-user")
    return usage_error(kProgram, kUsage, "backend " + backend + " simulates the device in this process: irdma-sim-run runs it");
  if (cmd.options.record) return usage_error(kProgram, kUsage, "--record needs the sim backend (irdma-sim-run)");
  return run_command(kProgram, kUsage, cmd, [](const SimConfig& cfg, const std::string& name, const std::string&,
                                               const std::string&) { return make_pcie_backend(cfg, name); });
}
