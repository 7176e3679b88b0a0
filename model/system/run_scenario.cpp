#include "model/system/run_scenario.h"

#include <stdexcept>

#include "model/system/served_device.h"
#include "model/system/server_child.h"
#include "model/system/simulation.h"

namespace irdma_sim::system {

testbench::Backend make_backend(const testbench::SimConfig& cfg, const std::string& name, const std::string& trace_path,
                     const std::string& stimulus_path) {
  testbench::Backend b;
  if (name == "sim") {
    b.host = std::make_unique<Simulation>(cfg, trace_path, stimulus_path);
  } else if (name == "vfio-user") {
    ServeOptions serve;
    serve.trace_path = trace_path;
    auto server = std::make_unique<ServerChild>(cfg, serve);
    b = testbench::make_pcie_backend(cfg, "vfio-user:" + server->socket_path());
    b.server = std::move(server);
  } else if (name.rfind("vfio-user:", 0) == 0 || name.rfind("vfio:", 0) == 0) {
    b = testbench::make_pcie_backend(cfg, name);
  } else {
    throw std::invalid_argument("unknown backend '" + name + "' (sim, vfio-user, vfio-user:SOCKET or vfio:DDDD:BB:DD.F)");
  }
  return b;
}

testbench::RunResult run_scenario(const std::string& scenario_path, const std::string& out_dir,
                                  const testbench::RunOptions& options) {
  return run_scenario(scenario_path, out_dir, options, make_backend);
}

}  // namespace irdma_sim::system
