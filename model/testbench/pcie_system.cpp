#include "model/testbench/pcie_system.h"

#include <stdexcept>

namespace irdma_sim::testbench {

PcieSystem::PcieSystem(std::unique_ptr<pcie::PciTransport> transport, const irdma::irdma_params& params,
                       Backdoor backdoor)
    : start_(std::chrono::steady_clock::now()), backend_(std::make_unique<pcie::PcieHost>(std::move(transport))) {
  if (backdoor == kLookForBackdoor && backends::RegionBackdoor::has_backdoor_region(backend_->transport()))
    backdoor_ = std::make_unique<backends::RegionBackdoor>(backend_->transport());
  driver_ = std::make_unique<irdma::irdma_device>(backend_->platform(), params);
  if (int ret = driver_->probe()) {
    driver_->remove();  // what the probe brought up goes back down
    throw std::runtime_error("driver probe failed: " + driver_->probe_error() + " (errno " + std::to_string(-ret) + ")");
  }
}

// Unloaded as a module would be (its workers stop, its queues go back to the device; a
// second remove finds nothing left), and its memory returned before the backend unmaps it.
PcieSystem::~PcieSystem() {
  if (driver_) driver_->remove();
  driver_.reset();
}

uint64_t PcieSystem::now_ps() const {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count()) * 1000;
}

HostCounters PcieSystem::host_counters() const {
  HostCounters c;
  const pcie::TransportErrors& bar0 = backend_->bar0().errors();
  const pcie::TransportErrors& config = backend_->config().errors();
  c.mmio_errors = bar0.count() + config.count();
  c.last_mmio_error = bar0.count() ? bar0.last() : config.last();
  c.dma_bytes_mapped = backend_->dma().mapped_bytes();
  c.msix_delivered = backend_->irq().delivered();
  c.spurious_interrupts = backend_->irq().spurious();
  return c;
}

}  // namespace irdma_sim::testbench
