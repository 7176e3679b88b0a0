// Giving the device up (Linux's rf->reset and irdma_request_reset): a CQP command timed
// out, the function reported an uncorrectable PCIe error, or it was reset under the driver,
// so nothing the device does from here on can be trusted. This half stops the function;
// what software then does for the work the device will never finish is the verbs layer's
// (`recover`).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "driver/hal/platform.h"
#include "driver/irdma/cqp.h"

namespace irdma {

class irdma_reset {
 public:
  enum class cause { cqp_timeout, pci_error, function_lost };

  irdma_reset(hal::Platform& hw, irdma_cqp& cqp) : hw_(hw), cqp_(cqp) {}
  irdma_reset(const irdma_reset&) = delete;
  irdma_reset& operator=(const irdma_reset&) = delete;

  // Once only: the CQP refuses commands from now on, and the function stops mastering the
  // bus (pci_clear_master), so that nothing it still holds is written into memory freed
  // after this; then `recover` runs, on the caller's thread, no lock held.
  void request(cause why);
  // pci_error_handlers::error_detected: whatever the error, the function is reset.
  void pci_error_detected();
  // Whether the function was reset under the driver (an FLR it did not ask for, a reset of
  // the whole device) or is gone, as the watchdog asks.
  bool function_lost() const;

  bool requested() const { return requested_.load(); }
  // When request() ran, on the host's clock; 0: never.
  uint64_t requested_ns() const { return requested_ns_.load(); }

  std::function<void()> recover;

  // What gave the device up (the first cause only), and the PCIe errors reported.
  struct counters {
    std::atomic<uint64_t> requests{0}, on_cqp_timeout{0}, on_pci_error{0}, on_function_lost{0}, pci_errors{0};
  };
  const counters& stats() const { return stats_; }

 private:
  hal::Platform& hw_;
  irdma_cqp& cqp_;
  std::atomic<bool> requested_{false};
  std::atomic<uint64_t> requested_ns_{0};
  counters stats_;
};

}  // namespace irdma
