// hal::DmaAllocator on the simulated host memory: the CPU pointer and the device address
// of the same bytes.
#pragma once

#include "driver/hal/dma.h"
#include "model/platform/host_memory.h"

namespace irdma_sim::platform {

class SimDma final : public hal::DmaAllocator {
 public:
  explicit SimDma(HostMemory& mem) : mem_(mem) {}

  hal::DmaBuffer alloc_coherent(size_t size, size_t align) override {
    const HostMemory::Region r = mem_.alloc(size, align);
    return {r.cpu, r.iova, r.size};
  }
  void free_coherent(const hal::DmaBuffer& buf) override { mem_.free(buf.iova); }

 private:
  HostMemory& mem_;
};

}  // namespace irdma_sim::platform
