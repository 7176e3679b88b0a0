#include "model/testbench/backend.h"

#include <stdexcept>

#include "driver/backends/vfio/vfio_transport.h"
#include "driver/backends/vfio_user/client.h"
#include "model/testbench/pcie_system.h"

namespace irdma_sim::testbench {

Backend make_pcie_backend(const SimConfig& cfg, const std::string& name) {
  Backend b;
  if (name.rfind("vfio-user:", 0) == 0 && name.size() > 10) {
    b.host = std::make_unique<PcieSystem>(std::make_unique<pcie::vfio_user::VfioUserClient>(name.substr(10)),
                                          driver_params(cfg));
  } else if (name.rfind("vfio:", 0) == 0 && name.size() > 5) {
    // Silicon: whatever a device-specific region may be, it is no backdoor of ours.
    b.host = std::make_unique<PcieSystem>(std::make_unique<pcie::VfioTransport>(name.substr(5)), driver_params(cfg),
                                          PcieSystem::kNoBackdoor);
  } else {
    throw std::invalid_argument("unknown backend '" + name + "' (vfio-user:SOCKET or vfio:DDDD:BB:DD.F)");
  }
  return b;
}

}  // namespace irdma_sim::testbench
