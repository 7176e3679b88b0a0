#include "model/system/simulation.h"

#include <algorithm>
#include <cerrno>
#include <exception>
#include <optional>
#include <stdexcept>

#include "model/device/regs.h"
#include "model/sc_compat.h"
#include "model/system/cq_writer_report.h"
#include "model/system/elaboration.h"
#include "model/testbench/yaml_reader.h"

namespace irdma_sim::system {

// Host CPU 0's thread: runs one job at a time, then pauses the simulation for the caller.
struct Simulation::HostJob : sc_core::sc_module {
  IRDMA_SC_HAS_PROCESS(HostJob);
  std::function<void()> job;
  std::exception_ptr error;
  bool done = true;
  bool queued = false;  // checked, not only waited for: the first job precedes sc_start
  sc_core::sc_event start;
  // Pending activity while paused: the host's next job comes at this very time, so the
  // device must not run ahead of it (EngineTime::alone_for).
  sc_core::sc_event next_job;

  platform::HostMemory& memory;

  HostJob(sc_core::sc_module_name name, size_t stack, platform::HostMemory& memory) : sc_module(name), memory(memory) {
    SC_THREAD(run);
    set_stack_size(int(stack));
  }
  void run() {
    for (;;) {
      while (!queued) sc_core::wait(start);
      queued = false;
      memory.land_posted_writes();
      try {
        job();
      } catch (...) {
        error = std::current_exception();
      }
      done = true;
      next_job.notify(sc_core::SC_ZERO_TIME);
      sc_core::sc_pause();
    }
  }
};


Simulation::Simulation(const testbench::SimConfig& cfg, const std::string& trace_path, const std::string& stimulus_path)
    : cfg_(cfg) {
  begin_elaboration("Simulation");
  // Nothing older than the link's unlanded writes is written yet: they are logged as they land.
  if (!trace_path.empty())
    trace_.open(trace_path, [this] {
      const uint64_t now = sc_core::sc_time_stamp().value();
      return link_ ? std::min(now, link_->unlanded_from_ps()) : now;
    });

  const bool approximate = cfg.sync == testbench::SyncMode::approximate;
  const sc_core::sc_time quantum =
      approximate ? sc_core::SC_ZERO_TIME : sc_core::sc_time(cfg.quantum_ns, sc_core::SC_NS);
  memory_ = std::make_unique<platform::HostMemory>("host_memory", cfg.host.memory_mb << 20);
  link_ = std::make_unique<platform::PcieLink>("pcie_link", cfg.link, approximate, trace_);
  device_ = std::make_unique<device::IrdmaDevice>("irdma", cfg.device, quantum, trace_,
                                                  make_cq_writer(cfg.device));
  mmio_ = std::make_unique<platform::SimMmio>("host_mmio", memory_.get());
  // The platform enumerated its one device: the BARs are the model's.
  bar0_ = std::make_unique<platform::SimBar>(*mmio_, 0, device::regs::BAR0_SIZE);
  msix_bar_ = std::make_unique<platform::SimBar>(*mmio_, device::regs::MSIX_BAR, device::regs::BAR3_SIZE);
  pci_config_ = std::make_unique<platform::SimPciConfig>(*mmio_);
  // The loosely timed host hands softirqs to ksoftirqd, as it did before the approximately
  // timed one ran them at irq exit: its outputs stay as they were.
  exec_ = std::make_unique<platform::SimExec>(cfg.host, *memory_, approximate);
  dma_ = std::make_unique<platform::SimDma>(*memory_);
  std::array<hal::Bar*, 6> bars{};
  bars[0] = bar0_.get();
  bars[device::regs::MSIX_BAR] = msix_bar_.get();
  irq_ = std::make_unique<platform::SimInterrupts>("host_irq", *pci_config_, bars, *memory_, cfg.link.faults);
  job_ = std::make_unique<HostJob>("host_cpu0", cfg.host.thread_stack, *memory_);

  if (!stimulus_path.empty()) {
    recorder_ = std::make_unique<StimulusRecorder>("stimulus_recorder", stimulus_path);
    mmio_->socket.bind(recorder_->mmio_in);
    recorder_->mmio_out.bind(link_->host_mmio);
    link_->host_mem.bind(recorder_->memory_in);
    recorder_->memory_out.bind(memory_->socket);
  } else {
    mmio_->socket.bind(link_->host_mmio);
    link_->host_mem.bind(memory_->socket);
  }
  link_->dev_bar.bind(device_->pci);
  device_->dma.bind(link_->dev_dma);
  link_->on_msi = [this](uint32_t data, sc_core::sc_time at) {
    if (recorder_) recorder_->msix(data);
    irq_->deliver(data, at);
  };
  link_->on_pci_error = [this](sc_core::sc_time at) { irq_->pci_error(at); };
  // The host looks at its memory only where its CPUs resume, so the device's posted writes
  // land there (and where the device reads their bytes). A recorded run lands them as they
  // arrive, as its replay, which has no host CPUs, does: the recording's order of device
  // accesses is the replay's.
  if (approximate && stimulus_path.empty()) link_->land_when_host_looks(*memory_);
  backdoor_ = std::make_unique<SimBackdoor>(*device_, *link_, recorder_.get());

  hal_ = std::make_unique<hal::Platform>(hal::Platform{*pci_config_, *bar0_, *dma_, *irq_, *exec_});
  driver_ = std::make_unique<irdma::irdma_device>(*hal_, testbench::driver_params(cfg));
  int ret = 0;
  run_on_host([&] { ret = driver_->probe(); });
  if (ret == -ENOMEM)
    throw testbench::ScenarioError("config.host.memory_mb = " + std::to_string(cfg.host.memory_mb) +
                                   " is too small: the driver's probe (its control QP and event queues) failed with ENOMEM");
  if (ret)
    throw std::runtime_error("driver probe failed: " + driver_->probe_error() + " (errno " + std::to_string(-ret) + ")");
}

Simulation::~Simulation() = default;

uint64_t Simulation::now_ps() const { return sc_core::sc_time_stamp().value(); }

std::optional<testbench::CqWriterFigures> Simulation::cq_writer_figures(const std::string& out_dir) {
  return system::cq_writer_figures(device_->cq_engine().writer(),
                                   cfg_.device.cq_writer_timing.value_or(device::CqWriterTiming::rtl), out_dir);
}

testbench::HostCounters Simulation::host_counters() const {
  testbench::HostCounters c;
  c.dma_errors = memory_->access_errors();
  c.mmio_errors = link_->mmio_errors();
  c.dma_bytes_mapped = memory_->mapped_bytes();
  c.msix_delivered = irq_->delivered();
  c.spurious_interrupts = irq_->spurious();
  c.msix_masked_by_host = irq_->masked_by_fault();
  return c;
}

void Simulation::run_on_host(const std::function<void()>& job) {
  job_->job = job;
  job_->error = nullptr;
  job_->done = false;
  job_->queued = true;
  job_->start.notify(sc_core::SC_ZERO_TIME);
  sc_core::sc_start();
  memory_->land_posted_writes();  // the caller may look
  trace_.flush();
  if (!job_->done)
    throw std::runtime_error("simulation ran out of events while the host job was still waiting");
  if (job_->error) std::rethrow_exception(job_->error);
}

// With nothing due within the slice, time goes straight to the next thing pending: the
// device's time runs only as its work needs, and idle is idle.
// Posted writes the link holds land as the slice ends, for the applications to see; time
// runs past none that arrives before the next thing pending, and with only those left, to
// the next.
bool Simulation::run_device(uint64_t max_ps) {
  const std::optional<sc_core::sc_time> arrival = link_->next_arrival();
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  if (sc_core::sc_pending_activity()) {
    sc_core::sc_time next = sc_core::sc_time_to_pending_activity();
    if (arrival) next = std::min(next, *arrival > now ? *arrival - now : sc_core::SC_ZERO_TIME);
    const sc_core::sc_time slice = sc_core::sc_time::from_value(max_ps);
    sc_core::sc_start(next > slice ? next : slice, sc_core::SC_EXIT_ON_STARVATION);
  } else if (arrival) {
    if (*arrival > now) sc_core::sc_start(*arrival - now);
  } else {
    return false;
  }
  memory_->land_posted_writes();
  trace_.flush();
  return sc_core::sc_pending_activity() || link_->next_arrival();
}

}  // namespace irdma_sim::system
