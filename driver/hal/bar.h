// MMIO access to one PCI BAR, at byte offsets from its start.
#pragma once

#include <cstdint>

namespace hal {

class Bar {
 public:
  virtual ~Bar() = default;
  virtual void write32(uint64_t offset, uint32_t value) = 0;
  virtual void write64(uint64_t offset, uint64_t value) = 0;
  virtual uint32_t read32(uint64_t offset) = 0;
  virtual uint64_t read64(uint64_t offset) = 0;
  // Its length as the platform enumerated it (pci_resource_len).
  virtual uint64_t size() const = 0;
};

}  // namespace hal
