#include "model/device/pci_config.h"

namespace irdma_sim::device {

using namespace pci;

void PciConfigSpace::put(uint32_t off, unsigned len, uint32_t value, uint32_t writable) {
  for (unsigned i = 0; i < len; i++) {
    cfg_[off + i] = uint8_t(value >> (8 * i));
    wmask_[off + i] = uint8_t(writable >> (8 * i));
  }
}

PciConfigSpace::PciConfigSpace(const PciIdentity& id, const std::array<PciBar, 6>& bars,
                               const PciMsix& msix)
    : id_(id), bars_(bars), msix_(msix) {

  put(VENDOR_ID, 2, id_.vendor, 0);
  put(DEVICE_ID, 2, id_.device, 0);
  put(COMMAND, 2, 0, COMMAND_MEMORY | COMMAND_MASTER | COMMAND_INTX_DISABLE);
  put(STATUS, 2, STATUS_CAP_LIST, 0);
  put(REVISION_ID, 1, id_.revision, 0);
  put(CLASS_PROG, 3, id_.class_code, 0);
  put(HEADER_TYPE, 1, 0, 0);
  for (unsigned i = 0; i < bars_.size(); i++) {
    const PciBar& b = bars_[i];
    if (!b.size) continue;
    // Memory BAR: bits 2:1 say 64-bit, bit 3 prefetchable; the base's bits below the
    // size read as 0, which is how the host learns the size.
    const uint32_t flags = (b.is_64bit ? 0x4 : 0) | (b.prefetchable ? 0x8 : 0);
    put(BAR_0 + 4 * i, 4, flags, uint32_t(~(b.size - 1)) & ~0xFu);
    if (b.is_64bit) put(BAR_0 + 4 * (i + 1), 4, 0, uint32_t(~(b.size - 1) >> 32));
  }
  put(SUBSYSTEM_VENDOR_ID, 2, id_.subsystem_vendor, 0);
  put(SUBSYSTEM_ID, 2, id_.subsystem, 0);
  put(CAPABILITY_LIST, 1, kMsixCap, 0);
  put(INTERRUPT_LINE, 1, 0, 0xFF);
  put(INTERRUPT_PIN, 1, 1, 0);  // INTA

  put(kMsixCap, 1, CAP_ID_MSIX, 0);
  put(kMsixCap + 1, 1, kExpCap, 0);
  put(kMsixCap + MSIX_FLAGS, 2, (msix_.vectors - 1) & MSIX_FLAGS_QSIZE, MSIX_FLAGS_ENABLE | MSIX_FLAGS_MASKALL);
  put(kMsixCap + MSIX_TABLE, 4, msix_.table_offset | msix_.bar, 0);
  put(kMsixCap + MSIX_PBA, 4, msix_.pba_offset | msix_.bar, 0);

  put(kExpCap, 1, CAP_ID_EXP, 0);
  put(kExpCap + 1, 1, 0, 0);
  put(kExpCap + EXP_FLAGS, 2, 0x0002, 0);  // capability version 2, endpoint
  put(kExpCap + EXP_DEVCAP, 4, EXP_DEVCAP_FLR | 0x1 /* 256-byte max payload */, 0);
  put(kExpCap + EXP_DEVCTL, 2, 0x2810, uint16_t(~EXP_DEVCTL_BCR_FLR));

  if (id_.serial_number) {
    put(EXT_CAP_START, 4, EXT_CAP_ID_DSN | 1u << 16, 0);  // version 1, the last in the list
    put(EXT_CAP_START + DSN_LOW, 4, uint32_t(id_.serial_number), 0);
    put(EXT_CAP_START + DSN_LOW + 4, 4, uint32_t(id_.serial_number >> 32), 0);
  }
  power_on_ = cfg_;
}

bool PciConfigSpace::initiates_flr(uint32_t offset, unsigned len, uint32_t value) {
  const uint32_t byte = kExpCap + EXP_DEVCTL + 1;  // the bit's byte
  return byte >= offset && byte < offset + len && (value >> (8 * (byte - offset))) & (EXP_DEVCTL_BCR_FLR >> 8);
}

bool PciConfigSpace::read(uint32_t offset, unsigned len, uint32_t& value) const {
  if ((len != 1 && len != 2 && len != 4) || offset >= kSize || len > kSize - offset) return false;
  value = 0;
  for (unsigned i = 0; i < len; i++) value |= uint32_t(cfg_[offset + i]) << (8 * i);
  return true;
}

bool PciConfigSpace::write(uint32_t offset, unsigned len, uint32_t value) {
  if ((len != 1 && len != 2 && len != 4) || offset >= kSize || len > kSize - offset) return false;
  for (unsigned i = 0; i < len; i++) {
    const uint8_t m = wmask_[offset + i];
    cfg_[offset + i] = uint8_t((cfg_[offset + i] & ~m) | (uint8_t(value >> (8 * i)) & m));
  }
  return true;
}

}  // namespace irdma_sim::device
