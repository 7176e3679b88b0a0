#include "driver/backends/pcie/pcie_host.h"

#include <string>

namespace pcie {
namespace {

PciTransport& present(const std::unique_ptr<PciTransport>& transport) {
  if (!transport) throw PciTransportError("pcie: no transport");
  return *transport;
}

}  // namespace

PcieHost::PcieHost(std::unique_ptr<PciTransport> transport, PcieHostOptions options)
    : transport_(std::move(transport)),
      config_(present(transport_)),
      bar0_(*transport_, vfio::kBar0RegionIndex),
      dma_(*transport_, options.dma),
      irq_(*transport_, config_),
      platform_{config_, bar0_, dma_, irq_, exec_} {
  if (hal::pci_possible_error(config_.read16(hal::PCI_VENDOR_ID)))
    throw PciTransportError("pcie: the function's config space does not answer (vendor id reads 0xffff)" +
                            (config_.errors().count() ? ": " + config_.errors().last() : std::string()));
  if (bar0_.size() == 0) throw PciTransportError("pcie: the function has no BAR0");
  if (!config_.find_capability(hal::PCI_CAP_ID_MSIX))
    throw PciTransportError("pcie: the function has no MSI-X capability");
}

}  // namespace pcie
