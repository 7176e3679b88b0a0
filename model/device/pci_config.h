// The device's PCI configuration space as the silicon presents it: identity, the BARs
// with their sizing, and the capabilities a host reads at enumeration (MSI-X with its
// table and PBA in BAR3 as on E810, PCI Express, the Device Serial Number). Bytes and write masks, so
// every access width works as on a real function; read-only bits stay as they are.
#pragma once

#include <array>
#include <cstdint>

namespace irdma_sim::device {

// Standard header and capability offsets, as the PCI spec numbers them.
namespace pci {
inline constexpr uint32_t VENDOR_ID = 0x00;
inline constexpr uint32_t DEVICE_ID = 0x02;
inline constexpr uint32_t COMMAND = 0x04;
inline constexpr uint32_t STATUS = 0x06;
inline constexpr uint32_t REVISION_ID = 0x08;
inline constexpr uint32_t CLASS_PROG = 0x09;  // prog-if, subclass, class: 3 bytes
inline constexpr uint32_t HEADER_TYPE = 0x0E;
inline constexpr uint32_t BAR_0 = 0x10;
inline constexpr uint32_t SUBSYSTEM_VENDOR_ID = 0x2C;
inline constexpr uint32_t SUBSYSTEM_ID = 0x2E;
inline constexpr uint32_t CAPABILITY_LIST = 0x34;
inline constexpr uint32_t INTERRUPT_LINE = 0x3C;
inline constexpr uint32_t INTERRUPT_PIN = 0x3D;
inline constexpr uint16_t COMMAND_MEMORY = 1u << 1;
inline constexpr uint16_t COMMAND_MASTER = 1u << 2;
inline constexpr uint16_t COMMAND_INTX_DISABLE = 1u << 10;
inline constexpr uint16_t STATUS_CAP_LIST = 1u << 4;
inline constexpr uint8_t CAP_ID_EXP = 0x10;
inline constexpr uint8_t CAP_ID_MSIX = 0x11;
// MSI-X capability: message control, table offset/BIR, PBA offset/BIR.
inline constexpr uint32_t MSIX_FLAGS = 2;
inline constexpr uint32_t MSIX_TABLE = 4;
inline constexpr uint32_t MSIX_PBA = 8;
inline constexpr uint16_t MSIX_FLAGS_QSIZE = 0x07FF;
inline constexpr uint16_t MSIX_FLAGS_MASKALL = 1u << 14;
inline constexpr uint16_t MSIX_FLAGS_ENABLE = 1u << 15;
// PCI Express capability: capabilities, device capabilities, device control.
inline constexpr uint32_t EXP_FLAGS = 2;
inline constexpr uint32_t EXP_DEVCAP = 4;
inline constexpr uint32_t EXP_DEVCTL = 8;
inline constexpr uint32_t EXP_DEVCAP_FLR = 1u << 28;    // Function Level Reset Capability
inline constexpr uint16_t EXP_DEVCTL_BCR_FLR = 1u << 15;  // Initiate Function Level Reset (reads 0)
// Extended capabilities, from 0x100: a header of ID 15:0, version 19:16, next 31:20.
inline constexpr uint32_t EXT_CAP_START = 0x100;
inline constexpr uint16_t EXT_CAP_ID_DSN = 0x0003;
inline constexpr uint32_t DSN_LOW = 4;  // the serial number's low dword, then its high one
}  // namespace pci

// The endpoint's target socket carries BAR and configuration accesses addressed as VFIO
// addresses its regions: index << 40 | offset, BARs 0-5, configuration space 7.
inline constexpr unsigned kRegionShift = 40;
inline constexpr unsigned kConfigRegion = 7;
constexpr uint64_t region_address(unsigned index, uint64_t offset) {
  return uint64_t(index) << kRegionShift | offset;
}

struct PciIdentity {
  uint16_t vendor = 0;
  uint16_t device = 0;
  uint16_t subsystem_vendor = 0;
  uint16_t subsystem = 0;
  uint8_t revision = 0;
  uint32_t class_code = 0;  // class, subclass, prog-if
  uint64_t serial_number = 0;  // the Device Serial Number capability's (0: no such capability)
};

struct PciBar {
  uint64_t size = 0;  // a power of two of at least 16 bytes; 0: absent
  bool is_64bit = false;
  bool prefetchable = false;
};

struct PciMsix {
  unsigned vectors = 0;  // 1 .. 2048
  uint8_t bar = 0;
  uint32_t table_offset = 0;
  uint32_t pba_offset = 0;
};

class PciConfigSpace {
 public:
  static constexpr uint32_t kSize = 4096;  // PCI Express: extended space included
  static constexpr uint8_t kMsixCap = 0x70;
  static constexpr uint8_t kExpCap = 0xA0;

  PciConfigSpace(const PciIdentity& id, const std::array<PciBar, 6>& bars, const PciMsix& msix);

  // Little-endian access of 1, 2 or 4 bytes inside the space; false when out of range.
  bool read(uint32_t offset, unsigned len, uint32_t& value) const;
  bool write(uint32_t offset, unsigned len, uint32_t value);
  // Whether writing `value` at [offset, offset + len) initiates a function level reset.
  static bool initiates_flr(uint32_t offset, unsigned len, uint32_t value);
  // A function level reset: every register back as at power-on (the host restores what it
  // saved, as Linux's pci_reset_function does).
  void reset() { cfg_ = power_on_; }

  bool memory_enabled() const { return read16(pci::COMMAND) & pci::COMMAND_MEMORY; }
  bool bus_master() const { return read16(pci::COMMAND) & pci::COMMAND_MASTER; }
  bool msix_enabled() const { return read16(kMsixCap + pci::MSIX_FLAGS) & pci::MSIX_FLAGS_ENABLE; }
  bool msix_function_masked() const { return read16(kMsixCap + pci::MSIX_FLAGS) & pci::MSIX_FLAGS_MASKALL; }

 private:
  uint16_t read16(uint32_t off) const { return uint16_t(cfg_[off] | cfg_[off + 1] << 8); }
  void put(uint32_t off, unsigned len, uint32_t value, uint32_t writable);

  PciIdentity id_;
  std::array<PciBar, 6> bars_;
  PciMsix msix_;
  std::array<uint8_t, kSize> cfg_{};
  std::array<uint8_t, kSize> wmask_{};  // bits the host may change
  std::array<uint8_t, kSize> power_on_{};
};

}  // namespace irdma_sim::device
