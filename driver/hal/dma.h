// Coherent DMA memory: what dma_alloc_coherent gives a kernel driver.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace hal {

struct DmaBuffer {
  void* cpu = nullptr;  // the driver's pointer; memory is zeroed on allocation
  uint64_t iova = 0;    // the address the device uses
  size_t size = 0;
  explicit operator bool() const { return cpu != nullptr; }
};

class DmaAllocator {
 public:
  virtual ~DmaAllocator() = default;
  // Returns an empty buffer when the memory cannot be had (the driver returns -ENOMEM).
  virtual DmaBuffer alloc_coherent(size_t size, size_t align) = 0;
  virtual void free_coherent(const DmaBuffer& buf) = 0;
};

// ThreadSanitizer cannot see the device, yet the device orders driver threads: what one
// thread wrote before a doorbell (a WQE, its tracking entry) another reads after the
// completion the device wrote for it. Under TSan, dma_wmb() releases and dma_rmb()
// acquires one object standing for the device, so that order is visible; elsewhere these
// compile to nothing.
#if defined(__SANITIZE_THREAD__)
inline char tsan_device;
inline void tsan_device_release() { __tsan_release(&tsan_device); }
inline void tsan_device_acquire() { __tsan_acquire(&tsan_device); }
#else
inline void tsan_device_release() {}
inline void tsan_device_acquire() {}
#endif

// Device-to-CPU read ordering (the kernel's dma_rmb). On x86 loads are not reordered with
// other loads, so the kernel's dma_rmb is a compiler barrier, and so is this; weaker
// architectures need the real fence.
inline void dma_rmb() {
#if defined(__x86_64__) || defined(__i386__)
  std::atomic_signal_fence(std::memory_order_acquire);
#else
  std::atomic_thread_fence(std::memory_order_acquire);
#endif
  tsan_device_acquire();
}

// CPU-to-device write ordering before a doorbell or a valid bit (the kernel's dma_wmb).
inline void dma_wmb() {
  tsan_device_release();
#if defined(__x86_64__) || defined(__i386__)
  std::atomic_signal_fence(std::memory_order_release);
#else
  std::atomic_thread_fence(std::memory_order_release);
#endif
}

}  // namespace hal
