// The host side of a hal::Platform for the driver on OS threads without a device model:
// DMA memory from the heap (the IOVA is the CPU address) and backends::OsExec. A test adds
// the device (config space, BAR, interrupts); NoDevice answers nothing, for code that only
// needs the driver's objects (the poll benchmark).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "driver/backends/os_exec.h"
#include "driver/hal/platform.h"

namespace irdma_sim::testing {

class HeapDma final : public hal::DmaAllocator {
 public:
  hal::DmaBuffer alloc_coherent(size_t size, size_t align) override {
    align = align < 64 ? 64 : align;
    const size_t rounded = (size + align - 1) / align * align;
    void* p = std::aligned_alloc(align, rounded);
    if (!p) return {};
    std::memset(p, 0, rounded);
    return {p, uint64_t(reinterpret_cast<uintptr_t>(p)), size};
  }
  void free_coherent(const hal::DmaBuffer& buf) override { std::free(buf.cpu); }
};

class NoDevice final : public hal::PciConfig, public hal::Bar, public hal::Interrupts {
 public:
  uint32_t read(uint32_t, unsigned) override { return ~0u; }
  void write(uint32_t, unsigned, uint32_t) override {}
  void write32(uint64_t, uint32_t) override {}
  void write64(uint64_t, uint64_t) override {}
  uint32_t read32(uint64_t) override { return ~0u; }
  uint64_t read64(uint64_t) override { return ~0ull; }
  uint64_t size() const override { return 0; }
  int alloc_irq_vectors(unsigned, unsigned) override { return -19; }  // -ENODEV
  unsigned num_vectors() const override { return 0; }
  int request_irq(unsigned, Handler) override { return -22; }  // -EINVAL
  void free_irq(unsigned) override {}
  void free_irq_vectors() override {}
};

}  // namespace irdma_sim::testing
