// The driver on this machine's OS threads, driving a PCIe function through a transport: the
// model served in another process over vfio-user, or silicon through kernel VFIO. A Host
// like Simulation, on the wall clock: nothing here is simulated.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "driver/backends/pcie/pcie_host.h"
#include "driver/backends/region_backdoor.h"
#include "driver/irdma/irdma_device.h"
#include "model/testbench/host.h"

namespace irdma_sim::testbench {

class PcieSystem final : public Host {
 public:
  // Builds the backend on `transport` and probes the driver. Throws
  // pcie::PciTransportError when the function is not there to drive, and
  // std::runtime_error naming the step when the probe fails. The test hooks are looked for
  // in a region the served model offers, unless `kNoBackdoor`.
  enum Backdoor { kLookForBackdoor, kNoBackdoor };
  PcieSystem(std::unique_ptr<pcie::PciTransport> transport, const irdma::irdma_params& params,
             Backdoor backdoor = kLookForBackdoor);
  ~PcieSystem() override;

  irdma::irdma_device& driver() override { return *driver_; }
  int reprobe() override { return probe_again(driver_); }
  // The job runs on the calling thread; completions arrive on the backend's own threads.
  void run_on_host(const std::function<void()>& job) override { job(); }
  uint64_t now_ps() const override;
  backends::DeviceBackdoor* backdoor() override { return backdoor_.get(); }
  HostCounters host_counters() const override;
  // Wall time on a shared machine, a sanitizer perhaps slowing every step: generous.
  uint64_t stall_timeout_ns() const override { return 2'000'000'000; }

 private:
  std::chrono::steady_clock::time_point start_;
  std::unique_ptr<pcie::PcieHost> backend_;
  std::unique_ptr<backends::RegionBackdoor> backdoor_;
  std::unique_ptr<irdma::irdma_device> driver_;
};

}  // namespace irdma_sim::testbench
