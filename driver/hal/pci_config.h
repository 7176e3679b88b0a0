// The function's PCI configuration space, as pci_read_config_* and pci_write_config_*
// reach it, and the standard offsets the driver and the PCI core use (pci_regs.h's names).
#pragma once

#include <cstdint>

namespace hal {

class PciConfig {
 public:
  virtual ~PciConfig() = default;
  // `len` is 1, 2 or 4. A read the function does not answer returns all ones.
  virtual uint32_t read(uint32_t offset, unsigned len) = 0;
  virtual void write(uint32_t offset, unsigned len, uint32_t value) = 0;

  uint16_t read16(uint32_t offset) { return uint16_t(read(offset, 2)); }
  // The offset of capability `id` in the standard list, 0 when there is none.
  uint8_t find_capability(uint8_t id);
  // The offset of extended capability `id` (PCI Express, from 0x100), 0 when there is none.
  uint16_t find_ext_capability(uint16_t id);
  // The Device Serial Number (pci_get_dsn), 0 when the function has none.
  uint64_t get_dsn();
};

inline constexpr uint32_t PCI_VENDOR_ID = 0x00;
inline constexpr uint32_t PCI_DEVICE_ID = 0x02;
inline constexpr uint32_t PCI_COMMAND = 0x04;
inline constexpr uint32_t PCI_STATUS = 0x06;
inline constexpr uint32_t PCI_REVISION_ID = 0x08;
inline constexpr uint32_t PCI_CAPABILITY_LIST = 0x34;
inline constexpr uint16_t PCI_COMMAND_MEMORY = 0x2;
// A read of a function that is gone completes with all ones (Linux's PCI_POSSIBLE_ERROR).
inline constexpr bool pci_possible_error(uint16_t v) { return v == 0xFFFF; }
inline constexpr uint16_t PCI_COMMAND_MASTER = 0x4;
inline constexpr uint16_t PCI_STATUS_CAP_LIST = 0x10;
inline constexpr uint8_t PCI_CAP_ID_EXP = 0x10;
inline constexpr uint8_t PCI_CAP_ID_MSIX = 0x11;
inline constexpr uint32_t PCI_EXP_DEVCAP = 4;
inline constexpr uint32_t PCI_EXP_DEVCTL = 8;
inline constexpr uint32_t PCI_EXP_DEVCAP_FLR = 1u << 28;
inline constexpr uint16_t PCI_EXP_DEVCTL_BCR_FLR = 1u << 15;
inline constexpr uint32_t PCI_CFG_SPACE_SIZE = 256;
inline constexpr uint32_t PCI_CFG_SPACE_EXP_SIZE = 4096;
inline constexpr uint16_t PCI_EXT_CAP_ID_DSN = 0x03;
inline constexpr uint32_t PCI_MSIX_FLAGS = 2;
inline constexpr uint32_t PCI_MSIX_TABLE = 4;
inline constexpr uint16_t PCI_MSIX_FLAGS_QSIZE = 0x07FF;
inline constexpr uint16_t PCI_MSIX_FLAGS_MASKALL = 0x4000;
inline constexpr uint16_t PCI_MSIX_FLAGS_ENABLE = 0x8000;
inline constexpr uint32_t PCI_MSIX_TABLE_BIR = 0x7;
inline constexpr uint32_t PCI_MSIX_ENTRY_SIZE = 16;
inline constexpr uint32_t PCI_MSIX_ENTRY_VECTOR_CTRL = 12;
inline constexpr uint32_t PCI_MSIX_ENTRY_CTRL_MASKBIT = 0x1;

inline uint8_t PciConfig::find_capability(uint8_t id) {
  if (!(read16(PCI_STATUS) & PCI_STATUS_CAP_LIST)) return 0;
  uint8_t pos = uint8_t(read(PCI_CAPABILITY_LIST, 1)) & ~3;
  // At most 48 capabilities fit in 192 bytes: a longer chain is a loop.
  for (int ttl = 48; pos >= 0x40 && ttl > 0; ttl--) {
    const uint16_t header = read16(pos);
    if ((header & 0xFF) == id) return pos;
    pos = uint8_t(header >> 8) & ~3;
  }
  return 0;
}

inline uint16_t PciConfig::find_ext_capability(uint16_t id) {
  uint32_t pos = PCI_CFG_SPACE_SIZE;
  // Each capability takes at least 8 bytes: a longer chain is a loop.
  for (int ttl = (PCI_CFG_SPACE_EXP_SIZE - PCI_CFG_SPACE_SIZE) / 8; ttl > 0; ttl--) {
    const uint32_t header = read(pos, 4);
    if (header == 0 || header == 0xFFFFFFFF) return 0;  // no extended space, or the function is gone
    if ((header & 0xFFFF) == id) return uint16_t(pos);
    pos = (header >> 20) & ~3u;
    if (pos < PCI_CFG_SPACE_SIZE) return 0;
  }
  return 0;
}

inline uint64_t PciConfig::get_dsn() {
  const uint16_t pos = find_ext_capability(PCI_EXT_CAP_ID_DSN);
  return pos ? uint64_t(read(pos + 8u, 4)) << 32 | read(pos + 4u, 4) : 0;
}

}  // namespace hal
