// Everything the driver needs from a machine, as one bundle a backend hands it, and the
// PCI core's function level reset on top of it.
#pragma once

#include <cerrno>

#include "driver/hal/bar.h"
#include "driver/hal/dma.h"
#include "driver/hal/exec.h"
#include "driver/hal/irq.h"
#include "driver/hal/pci_config.h"

namespace hal {

struct Platform {
  PciConfig& config;
  Bar& bar0;
  DmaAllocator& dma;
  Interrupts& irq;
  Exec& exec;
};

// pcie_flr: resets the function through its PCI Express Device Control register and waits
// the 100 ms the spec gives it before it must answer again. -ENOTTY when it offers no FLR,
// -ENODEV when it does not come back (its configuration space reads all ones).
inline int pcie_flr(PciConfig& config, Exec& exec) {
  const uint8_t exp = config.find_capability(PCI_CAP_ID_EXP);
  if (!exp || !(config.read(exp + PCI_EXP_DEVCAP, 4) & PCI_EXP_DEVCAP_FLR)) return -ENOTTY;
  config.write(exp + PCI_EXP_DEVCTL, 2, config.read16(exp + PCI_EXP_DEVCTL) | PCI_EXP_DEVCTL_BCR_FLR);
  exec.delay_ns(100'000'000);
  return config.read16(PCI_VENDOR_ID) == 0xFFFF ? -ENODEV : 0;
}

}  // namespace hal
