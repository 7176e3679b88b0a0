// Everything the driver needs from a machine, as one bundle a backend hands it.
#pragma once

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

}  // namespace hal
