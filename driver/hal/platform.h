// Everything the driver needs from a machine, as one bundle a backend hands it.
#pragma once

#include "driver/hal/bar.h"
#include "driver/hal/dma.h"
#include "driver/hal/exec.h"
#include "driver/hal/irq.h"

namespace hal {

struct Platform {
  Bar& bar0;
  DmaAllocator& dma;
  Interrupts& irq;
  Exec& exec;
};

}  // namespace hal
