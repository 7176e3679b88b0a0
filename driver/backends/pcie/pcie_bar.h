// hal::Bar on one BAR of a transport. An aligned access that lies inside one of the region's
// mmap areas is a single load or store through the mapping (a doorbell costs a store);
// any other goes through the transport's region_read/region_write (posted, if the transport
// posts writes). The driver never sees a transport error: a failed read answers all ones,
// as a PCIe read the function does not complete, and the driver's timeouts take it from
// there; a failed write is dropped. Both are counted in errors().
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "driver/backends/pci_transport.h"
#include "driver/backends/pcie/transport_errors.h"
#include "driver/hal/bar.h"

namespace pcie {

class PcieBar final : public hal::Bar {
 public:
  // BAR `index` (0-5) as the transport reports it; an absent BAR has size() 0 and every
  // access fails. Throws PciTransportError when the transport cannot say.
  PcieBar(PciTransport& transport, uint32_t index);

  void write32(uint64_t offset, uint32_t value) override;
  void write64(uint64_t offset, uint64_t value) override;
  uint32_t read32(uint64_t offset) override;
  uint64_t read64(uint64_t offset) override;

  uint32_t index() const { return index_; }
  uint64_t size() const override { return size_; }
  const TransportErrors& errors() const { return errors_; }

 private:
  template <typename T>
  T read(uint64_t offset);
  template <typename T>
  void write(uint64_t offset, T value);
  // Where [offset, offset + len) is mapped, or null when it takes the slow path.
  void* mapped(uint64_t offset, size_t len) const;

  PciTransport& transport_;
  uint32_t index_;
  uint64_t size_;
  std::vector<MmapArea> areas_;  // only the areas the transport did map
  TransportErrors errors_;
};

}  // namespace pcie
