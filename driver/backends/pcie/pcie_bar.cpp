#include "driver/backends/pcie/pcie_bar.h"

#include <string>

namespace pcie {
namespace {

std::string describe(const char* what, uint32_t bar, uint64_t offset, size_t len) {
  return "BAR" + std::to_string(bar) + " " + what + std::to_string(8 * len) + " at " + std::to_string(offset);
}

}  // namespace

PcieBar::PcieBar(PciTransport& transport, uint32_t index) : transport_(transport), index_(index) {
  const RegionInfo& region = transport_.region(index);
  size_ = region.size;
  for (const MmapArea& area : region.mmap_areas)
    if (area.ptr) areas_.push_back(area);
}

void* PcieBar::mapped(uint64_t offset, size_t len) const {
  if (offset % len) return nullptr;  // a split access is the device's business, not a torn load's
  for (const MmapArea& area : areas_)
    if (offset >= area.offset && len <= area.size && offset - area.offset <= area.size - len)
      return static_cast<uint8_t*>(area.ptr) + (offset - area.offset);
  return nullptr;
}

// Mapped accesses are volatile (each one happens, once, at its width) with readl/writel's
// ordering: a store is released after the CPU's earlier writes to DMA memory (the WQE
// before its doorbell), a load is acquired before the CPU's later reads of DMA memory.
// On x86 both are a plain mov.
template <typename T>
T PcieBar::read(uint64_t offset) {
  if (auto* p = static_cast<volatile T*>(mapped(offset, sizeof(T)))) return __atomic_load_n(p, __ATOMIC_ACQUIRE);
  T value = 0;
  try {
    transport_.region_read(index_, offset, &value, sizeof(T));
  } catch (const PciTransportError& e) {
    errors_.record(describe("read", index_, offset, sizeof(T)) + ": " + e.what());
    return ~T(0);
  }
  return value;
}

template <typename T>
void PcieBar::write(uint64_t offset, T value) {
  if (auto* p = static_cast<volatile T*>(mapped(offset, sizeof(T)))) {
    __atomic_store_n(p, value, __ATOMIC_RELEASE);
    return;
  }
  try {
    transport_.region_write(index_, offset, &value, sizeof(T));
  } catch (const PciTransportError& e) {
    errors_.record(describe("write", index_, offset, sizeof(T)) + ": " + e.what());
  }
}

void PcieBar::write32(uint64_t offset, uint32_t value) { write(offset, value); }
void PcieBar::write64(uint64_t offset, uint64_t value) { write(offset, value); }
uint32_t PcieBar::read32(uint64_t offset) { return read<uint32_t>(offset); }
uint64_t PcieBar::read64(uint64_t offset) { return read<uint64_t>(offset); }

}  // namespace pcie
