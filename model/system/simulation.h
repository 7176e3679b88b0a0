// The whole simulated system, elaborated once per process (SystemC's rule): host memory,
// PCIe link, the irdma device, the simulated host that implements driver/hal, and the
// driver probed on top. Host work runs as SystemC threads of host CPU 0.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "driver/irdma/irdma_device.h"
#include "model/device/irdma_device.h"
#include "model/platform/host_memory.h"
#include "model/platform/pcie_link.h"
#include "model/platform/sim_dma.h"
#include "model/platform/sim_exec.h"
#include "model/platform/sim_interrupts.h"
#include "model/platform/sim_mmio.h"
#include "model/testbench/host.h"
#include "model/system/sim_backdoor.h"
#include "model/testbench/sim_config.h"
#include "model/system/stimulus.h"
#include "model/trace/trace_log.h"

namespace irdma_sim::system {

class Simulation final : public testbench::Host {
 public:
  // `trace_path` empty: no transaction log; `stimulus_path` empty: no record for replay
  // (stimulus.h). Throws std::logic_error if a simulation was already elaborated in this
  // process, ScenarioError if the host's memory cannot hold what the driver needs to probe.
  explicit Simulation(const testbench::SimConfig& cfg, const std::string& trace_path = "",
                      const std::string& stimulus_path = "");
  ~Simulation() override;
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // Runs `job` on host CPU 0 and simulates until it returns; rethrows what it throws.
  // Throws std::runtime_error if the simulation runs dry while the job still waits.
  void run_on_host(const std::function<void()>& job) override;
  // Lets the device go on with what it has (no host job) for `max_ps` of simulated time, or
  // to the next thing pending if that is later, stopping early when nothing is left; true
  // when something still is.
  bool run_device(uint64_t max_ps);

  irdma::irdma_device& driver() override { return *driver_; }
  int reprobe() override {
    int ret = 0;
    run_on_host([&] { ret = testbench::probe_again(driver_); });
    return ret;
  }
  backends::DeviceBackdoor* backdoor() override { return backdoor_.get(); }
  testbench::HostCounters host_counters() const override;
  uint64_t stall_timeout_ns() const override { return 50'000'000; }  // simulated: 50 ms is an age
  const device::IrdmaDevice& device() const { return *device_; }
  device::IrdmaDevice& device() { return *device_; }
  platform::HostMemory& memory() { return *memory_; }
  const platform::SimInterrupts& interrupts() const { return *irq_; }
  const platform::PcieLink& link() const { return *link_; }
  const platform::SimExec& exec() const { return *exec_; }
  const testbench::SimConfig& config() const { return cfg_; }
  trace::TraceLog* trace() override { return &trace_; }
  std::optional<testbench::CqWriterFigures> cq_writer_figures(const std::string& out_dir) override;
  uint64_t now_ps() const override;
  void close_trace() override {
    trace_.close();
    if (recorder_) recorder_->close();
  }

 private:
  void host_thread();

  testbench::SimConfig cfg_;
  trace::TraceLog trace_;
  std::unique_ptr<platform::HostMemory> memory_;
  std::unique_ptr<platform::PcieLink> link_;
  std::unique_ptr<StimulusRecorder> recorder_;
  std::unique_ptr<device::IrdmaDevice> device_;
  std::unique_ptr<platform::SimMmio> mmio_;
  std::unique_ptr<platform::SimBar> bar0_, msix_bar_;
  std::unique_ptr<platform::SimPciConfig> pci_config_;
  std::unique_ptr<platform::SimExec> exec_;
  std::unique_ptr<platform::SimDma> dma_;
  std::unique_ptr<platform::SimInterrupts> irq_;
  std::unique_ptr<hal::Platform> hal_;
  std::unique_ptr<irdma::irdma_device> driver_;
  std::unique_ptr<SimBackdoor> backdoor_;
  struct HostJob;
  std::unique_ptr<HostJob> job_;
};

}  // namespace irdma_sim::system
