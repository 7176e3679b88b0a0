// What a scenario runs on: a machine with the driver probed on it. The in-process
// simulation is one; the model served over vfio-user is another. The workload and the
// Session see the device only through the driver's verbs, the HAL and the backdoor.
#pragma once

#include <cerrno>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "driver/backends/device_backdoor.h"
#include "driver/core/cq_pool.h"
#include "driver/irdma/irdma_device.h"
#include "model/testbench/cq_writer_figures.h"
#include "model/testbench/sim_config.h"

namespace irdma_sim::trace {
class TraceLog;
}

namespace irdma_sim::testbench {

// The host side's own view of the device.
struct HostCounters {
  uint64_t dma_errors = 0;        // device DMA the host refused (memory not mapped)
  uint64_t mmio_errors = 0;       // CPU accesses the device refused
  std::string last_mmio_error;    // what a backend's last refusal said (BAR0's before config space's)
  uint64_t dma_bytes_mapped = 0;  // DMA memory handed out and not freed
  uint64_t msix_delivered = 0;
  uint64_t spurious_interrupts = 0;  // MSI-X for a vector with no handler
  uint64_t msix_masked_by_host = 0;  // vectors the host masked for a while (link.faults.msix_mask_rate)
};

// What a configuration tells the driver rather than the device: its module parameters.
inline irdma::irdma_params driver_params(const SimConfig& cfg) {
  irdma::irdma_params p;
  p.ceq_itr_us = cfg.device.ceq_itr_us;
  p.eq_watchdog_us = cfg.driver.eq_watchdog_us;
  p.cqp_timeout_ms = cfg.driver.cqp_timeout_ms;
  return p;
}

// Host::reprobe's work, on the host: `driver` removed, the function reset where it offers
// an FLR (a device given up on a timeout holds what it wedged on), and a new driver probed;
// -EBUSY, the driver left as it was (but its idle pool CQs), while its caller still holds
// objects made on it.
inline int probe_again(std::unique_ptr<irdma::irdma_device>& driver) {
  hal::Platform& hw = driver->hw();
  const irdma::irdma_params params = driver->params();
  ibcore::ib_cq_pool_cleanup(driver.get());  // the pool's idle CQs are the driver's own
  if (driver->in_use()) return -EBUSY;
  driver->remove();
  if (const int ret = hal::pcie_flr(hw.config, hw.exec); ret && ret != -ENOTTY) return ret;
  driver = std::make_unique<irdma::irdma_device>(hw, params);
  const int ret = driver->probe();
  if (ret) driver->remove();
  return ret;
}

class Host {
 public:
  virtual ~Host() = default;
  virtual irdma::irdma_device& driver() = 0;
  // The driver removed and probed again on the same function after a function level reset,
  // as Linux's irdma is when its device comes back from a reset (the auxiliary driver's
  // remove, then probe): a new irdma_device with the same parameters, nothing of the old
  // one left. Returns the probe's result (a failed probe's driver is removed again:
  // driver().probe_error() says why), -ENODEV when the function did not come back from
  // its reset, or -EBUSY while a CQ, QP, PD or memory key made on the old driver is held.
  virtual int reprobe() = 0;
  // Runs `job` as the host's work and returns once it has; rethrows what it throws.
  virtual void run_on_host(const std::function<void()>& job) = 0;
  // The host's clock: simulated time, or wall time since start.
  virtual uint64_t now_ps() const = 0;
  // Null when the device offers no backdoor (silicon).
  virtual backends::DeviceBackdoor* backdoor() = 0;
  virtual HostCounters host_counters() const = 0;
  // How long traffic may go without a completion before the workload calls it a stall, on
  // this host's clock.
  virtual uint64_t stall_timeout_ns() const = 0;
  // The transaction log, null when this host keeps none.
  virtual trace::TraceLog* trace() { return nullptr; }
  // Writes out the rest of the transaction log, if any.
  virtual void close_trace() {}
  // When the device runs in this process with the RTL CQ writer in the loop: its figures,
  // its coverage written to `out_dir`/rtl_coverage.dat; else nullopt.
  virtual std::optional<CqWriterFigures> cq_writer_figures(const std::string& /*out_dir*/) { return std::nullopt; }
};

}  // namespace irdma_sim::testbench
