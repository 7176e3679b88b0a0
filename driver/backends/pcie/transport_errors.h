// Transport failures a backend absorbed instead of throwing into the driver (a read that
// answered all ones, a write or a DMA map that did not happen): how many, and what the last
// one said, for the harness and the log. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace pcie {

class TransportErrors {
 public:
  void record(std::string what) {
    std::lock_guard lock(mutex_);
    last_ = std::move(what);
    count_.fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  std::string last() const {
    std::lock_guard lock(mutex_);
    return last_;
  }

 private:
  std::atomic<uint64_t> count_{0};
  mutable std::mutex mutex_;
  std::string last_;
};

}  // namespace pcie
