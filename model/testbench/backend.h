// Where a run's device is (RunOptions::backend): the host that drives it, and the process
// serving it when the run started one. The test bench makes the backends that need no
// simulator in this process; model/system adds those that do (sim, and vfio-user with a
// server of the run's own).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "model/testbench/host.h"
#include "model/testbench/sim_config.h"

namespace irdma_sim::testbench {

// A process serving the device for one run alone.
class ServerProcess {
 public:
  virtual ~ServerProcess() = default;
  // How it ended, waiting up to `timeout_ms` for it: "" when it ended well, else how
  // ("killed by signal 9 (Killed)", "exit status 3"); std::runtime_error while it runs.
  virtual std::string wait(int timeout_ms) = 0;
};

struct Backend {
  std::unique_ptr<ServerProcess> server;  // null unless the run started one; outlives the host
  std::unique_ptr<Host> host;
};

// Makes the backend `name` names for `cfg`; `trace_path` and `stimulus_path`: where a device
// this process simulates or serves logs its transactions and the host's stimulus ("": not
// at all). Throws ScenarioError when the scenario cannot run there, std::invalid_argument
// for a name it does not know.
using BackendFactory = std::function<Backend(const SimConfig& cfg, const std::string& name,
                                             const std::string& trace_path, const std::string& stimulus_path)>;

// vfio-user:SOCKET (a device served there already) and vfio:DDDD:BB:DD.F (a function bound
// to vfio-pci: silicon, no backdoor).
Backend make_pcie_backend(const SimConfig& cfg, const std::string& name);

}  // namespace irdma_sim::testbench
