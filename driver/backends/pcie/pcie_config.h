// hal::PciConfig over a transport's config region (VFIO region 7), the slow path. The
// driver never sees a transport error: a failed read answers all ones, as a PCIe read the
// function does not complete; a failed write is dropped. Both are counted in errors().
#pragma once

#include <cstdint>

#include "driver/backends/pci_transport.h"
#include "driver/backends/pcie/transport_errors.h"
#include "driver/hal/pci_config.h"

namespace pcie {

class PcieConfig final : public hal::PciConfig {
 public:
  explicit PcieConfig(PciTransport& transport) : transport_(transport) {}

  uint32_t read(uint32_t offset, unsigned len) override;
  void write(uint32_t offset, unsigned len, uint32_t value) override;

  const TransportErrors& errors() const { return errors_; }

 private:
  PciTransport& transport_;
  TransportErrors errors_;
};

}  // namespace pcie
