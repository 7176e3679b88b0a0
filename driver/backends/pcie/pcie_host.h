// The driver's machine on a PCIe function: hal::Platform over a PciTransport (the
// vfio-user client or kernel VFIO), as DPDK, SPDK and mlx5_vfio build theirs.
// It owns the transport and builds config space, BAR0, the DMA pool, the MSI-X dispatcher
// and OS execution on it, after checking that the function is there to drive.
#pragma once

#include <memory>

#include "driver/backends/os_exec.h"
#include "driver/backends/pci_transport.h"
#include "driver/backends/pcie/dma_pool.h"
#include "driver/backends/pcie/irq_dispatcher.h"
#include "driver/backends/pcie/pcie_bar.h"
#include "driver/backends/pcie/pcie_config.h"
#include "driver/hal/platform.h"

namespace pcie {

struct PcieHostOptions {
  DmaPoolOptions dma;
};

class PcieHost {
 public:
  // Throws PciTransportError, one line saying what is wrong, when config space does not
  // answer (vendor id 0xffff), BAR0 is absent or the function has no MSI-X capability.
  explicit PcieHost(std::unique_ptr<PciTransport> transport, PcieHostOptions options = {});
  PcieHost(const PcieHost&) = delete;
  PcieHost& operator=(const PcieHost&) = delete;

  hal::Platform& platform() { return platform_; }

  // The parts, for the harness's counters and checks.
  PciTransport& transport() { return *transport_; }
  PcieConfig& config() { return config_; }
  PcieBar& bar0() { return bar0_; }
  DmaPool& dma() { return dma_; }
  IrqDispatcher& irq() { return irq_; }

 private:
  // Destroyed in reverse: the driver's objects before the transport they use.
  std::unique_ptr<PciTransport> transport_;
  PcieConfig config_;
  PcieBar bar0_;
  DmaPool dma_;
  IrqDispatcher irq_;
  backends::OsExec exec_;
  hal::Platform platform_;
};

}  // namespace pcie
