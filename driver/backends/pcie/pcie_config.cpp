#include "driver/backends/pcie/pcie_config.h"

#include <string>

namespace pcie {
namespace {

bool valid_width(unsigned len) { return len == 1 || len == 2 || len == 4; }

std::string describe(const char* what, uint32_t offset, unsigned len) {
  return std::string("config ") + what + " of " + std::to_string(len) + " bytes at " + std::to_string(offset);
}

}  // namespace

uint32_t PcieConfig::read(uint32_t offset, unsigned len) {
  if (!valid_width(len)) {
    errors_.record(describe("read", offset, len) + ": width must be 1, 2 or 4");
    return ~0u;
  }
  const uint32_t all_ones = uint32_t(~0ull >> (64 - 8 * len));
  uint32_t value = 0;  // config space is little-endian, as is every host this runs on
  try {
    transport_.region_read(vfio::kConfigRegionIndex, offset, &value, len);
  } catch (const PciTransportError& e) {
    errors_.record(describe("read", offset, len) + ": " + e.what());
    return all_ones;
  }
  return value;
}

void PcieConfig::write(uint32_t offset, unsigned len, uint32_t value) {
  if (!valid_width(len)) {
    errors_.record(describe("write", offset, len) + ": width must be 1, 2 or 4");
    return;
  }
  try {
    transport_.region_write(vfio::kConfigRegionIndex, offset, &value, len);
  } catch (const PciTransportError& e) {
    errors_.record(describe("write", offset, len) + ": " + e.what());
  }
}

}  // namespace pcie
