// User memory a command names, pinned for the device (Linux's struct ib_umem and
// ib_umem_get): the pages of [address, address + length) held for as long as the object
// that pinned them lives, and the DMA address of each 4 KiB block the device reaches them by.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace ibcore {

class ib_umem {
 public:
  // Unpins: the device reaches the pages no more.
  virtual ~ib_umem() = default;
  uint64_t address = 0;  // the user address it starts at
  uint64_t length = 0;
  bool writable = false;
  // One per 4 KiB block the range touches, the first aligned down (what
  // rdma_umem_for_each_dma_block gives a driver that asks for 4 KiB blocks).
  std::vector<uint64_t> dma_blocks;
};

// The memory of the process a command came from (current->mm): what ib_umem_get pins in.
class ib_user_mm {
 public:
  virtual ~ib_user_mm() = default;
  // ib_umem_get: null with `err` -EINVAL for an empty or overflowing range, -EFAULT when
  // the process does not have it, -ENOMEM when the device cannot map more.
  virtual std::unique_ptr<ib_umem> ib_umem_get(uint64_t addr, uint64_t length, bool writable, int& err) = 0;
};

}  // namespace ibcore
