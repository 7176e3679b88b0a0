// DeviceBackdoor over a transport's backdoor region (backdoor_region.h).
#pragma once

#include "driver/backends/backdoor_region.h"
#include "driver/backends/pci_transport.h"

namespace backends {

class RegionBackdoor final : public DeviceBackdoor {
 public:
  // The transport must outlive this; use has_backdoor_region() to ask first.
  explicit RegionBackdoor(pcie::PciTransport& transport) : transport_(transport) {}
  static bool has_backdoor_region(pcie::PciTransport& transport);

  DeviceCounters counters() override;
  bool inject_fault(uint32_t qp, uint64_t nth_request, uint16_t flush_minor) override;
  void force_msix(unsigned vector) override;

 private:
  pcie::PciTransport& transport_;
};

}  // namespace backends
