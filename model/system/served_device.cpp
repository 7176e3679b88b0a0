#include "model/system/served_device.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <thread>

#include <unistd.h>

#include "driver/backends/backdoor_region.h"
#include "driver/backends/vfio_user/socket.h"
#include "model/device/pci_config.h"
#include "model/device/regs.h"
#include "model/system/elaboration.h"
#include "model/system/server_child.h"
#include "model/testbench/scenario.h"
#include "model/testbench/stop_signals.h"
#include "model/testbench/yaml_reader.h"

namespace irdma_sim::system {

namespace {

namespace vfio = pcie::vfio;
constexpr uint32_t kReadWrite = vfio::kRegionFlagRead | vfio::kRegionFlagWrite;
// How long the server waits for a message when the model has nothing to do: it also bounds
// how late stop() is seen.
constexpr int kIdleWaitMs = 20;
// The model catches up with the wall clock in slices of at most kSlice, for at most
// kMaxCatchUp of wall time before the next message: a model slower than real time (RNR
// retries storming under a slow client) falls behind instead of starving the socket.
const sc_core::sc_time kSlice(10, sc_core::SC_US);
constexpr auto kMaxCatchUp = std::chrono::microseconds(50);
const sc_core::sc_time kSettle(10, sc_core::SC_US);

}  // namespace

ServedDevice::ServedDevice(const testbench::SimConfig& cfg, const std::string& socket_path, const ServeOptions& options)
    : cfg_(cfg), offer_backdoor_(options.backdoor), trace_path_(options.trace_path) {
  testbench::check_servable(cfg);
  begin_elaboration("ServedDevice");
  platform::VfioUserServerOptions server_options;
  server_options.serve_next_client = false;  // the next one gets a device fresh from power-on
  server_options.listen_fd = options.listen_fd;
  server_ = std::make_unique<platform::VfioUserServer>(*this, socket_path, server_options);
  if (!options.trace_path.empty())
    trace_.open(options.trace_path, [] { return sc_core::sc_time_stamp().value(); },
                options.trace_format.value_or(trace::TraceLog::format_for(options.trace_path)));

  const bool approximate = cfg.sync == testbench::SyncMode::approximate;
  const sc_core::sc_time quantum =
      approximate ? sc_core::SC_ZERO_TIME : sc_core::sc_time(cfg.quantum_ns, sc_core::SC_NS);
  memory_ = std::make_unique<platform::RemoteMemory>("client_memory", *server_);
  // The client's memory is real memory: a write lands when issued.
  link_ = std::make_unique<platform::PcieLink>("pcie_link", cfg.link, false, trace_);
  device_ = std::make_unique<device::IrdmaDevice>("irdma", cfg.device, quantum, trace_, make_cq_writer(cfg.device));
  port_ = std::make_unique<platform::SimMmio>("client_mmio", nullptr);
  port_->socket.bind(link_->host_mmio);
  link_->dev_bar.bind(device_->pci);
  device_->dma.bind(link_->dev_dma);
  link_->host_mem.bind(memory_->socket);
  // A vector the client gave no eventfd is one its host left masked.
  device_->msix_out = [this](unsigned vector) {
    return link_->msi_by_vector(vector, [this](unsigned v) { return server_->trigger_irq(vfio::kMsixIrqIndex, v); });
  };
  backdoor_ = std::make_unique<SimBackdoor>(*device_, *link_);
}

// A log of a device no client ever came to is no log: it goes.
ServedDevice::~ServedDevice() {
  try {
    trace_.close();
  } catch (const std::runtime_error& e) {  // nobody to throw to: the server's stderr says it
    std::fprintf(stderr, "irdma-sim serve: %s\n", e.what());
  }
  if (!had_client_ && !trace_path_.empty()) std::filesystem::remove(trace_path_);
}

void ServedDevice::stop() {
  stop_ = true;
  server_->stop();
}

// Messages are served between slices of simulated time that keep the model level with the
// wall clock (as far as it keeps up); with nothing pending in the model the server sleeps
// until a message comes.
void ServedDevice::run() {
  const auto start = std::chrono::steady_clock::now();
  const uint64_t sim_start_ps = sc_core::sc_time_stamp().value();
  // The simulated time the wall clock has reached.
  const auto wall_ps = [&] {
    return sim_start_ps + uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::steady_clock::now() - start).count()) * 1000;
  };
  while (!stop_) {
    // Sleep in the socket until a message comes or the model's next event is due on the
    // wall clock (at once, for a model that has fallen behind it).
    int wait_ms = kIdleWaitMs;
    if (sc_core::sc_pending_activity()) {
      const uint64_t due_ps = sc_core::sc_time_stamp().value() + sc_core::sc_time_to_pending_activity().value();
      const uint64_t wall = wall_ps();
      wait_ms = due_ps > wall ? int(std::min<uint64_t>(kIdleWaitMs, (due_ps - wall) / 1'000'000'000)) : 0;
    }
    if (!server_->serve_one_message(wait_ms)) break;
    had_client_ = had_client_ || server_->client_connected();
    const uint64_t target_ps = wall_ps();
    const auto deadline = std::chrono::steady_clock::now() + kMaxCatchUp;
    for (uint64_t now_ps; (now_ps = sc_core::sc_time_stamp().value()) < target_ps;) {
      sc_core::sc_start(std::min(kSlice, sc_core::sc_time::from_value(target_ps - now_ps)));
      if (std::chrono::steady_clock::now() >= deadline) break;
    }
    trace_.flush();
  }
}

uint32_t ServedDevice::config_space_size() const { return device::PciConfigSpace::kSize; }

std::vector<platform::VfioUserRegion> ServedDevice::regions() const {
  std::vector<platform::VfioUserRegion> r(offer_backdoor_ ? 3 : 2);
  r[0].index = 0;
  r[0].size = device::regs::BAR0_SIZE;
  r[1].index = device::regs::MSIX_BAR;
  r[1].size = device::regs::BAR3_SIZE;
  if (offer_backdoor_) {
    r[2].index = backends::kBackdoorRegionIndex;
    r[2].size = backends::kBackdoorRegionSize;
  }
  for (auto& region : r) region.flags = kReadWrite;
  return r;
}

uint32_t ServedDevice::irq_count(uint32_t irq_index) const {
  return irq_index == vfio::kMsixIrqIndex ? cfg_.device.msix_vectors() : 0;
}

int ServedDevice::access(tlm::tlm_command cmd, uint32_t region, uint64_t offset, void* data, size_t size) {
  if (size > 8) return EINVAL;
  return port_->access(cmd, region, offset, data, unsigned(size)) ? 0 : EINVAL;
}

int ServedDevice::config_read(uint64_t offset, void* data, size_t size) {
  return access(tlm::TLM_READ_COMMAND, device::kConfigRegion, offset, data, size);
}

int ServedDevice::config_write(uint64_t offset, const void* data, size_t size) {
  return access(tlm::TLM_WRITE_COMMAND, device::kConfigRegion, offset, const_cast<void*>(data), size);
}

int ServedDevice::region_read(uint32_t index, uint64_t offset, void* data, size_t size) {
  if (index == backends::kBackdoorRegionIndex) return backdoor_read(offset, data, size);
  return access(tlm::TLM_READ_COMMAND, index, offset, data, size);
}

int ServedDevice::region_write(uint32_t index, uint64_t offset, const void* data, size_t size) {
  if (index == backends::kBackdoorRegionIndex) return backdoor_write(offset, data, size);
  return access(tlm::TLM_WRITE_COMMAND, index, offset, const_cast<void*>(data), size);
}

void ServedDevice::reset() {
  device_->function_reset("host");
  sc_core::sc_start(kSettle);  // the engines' half, so that the reply finds the function reset
}

int ServedDevice::backdoor_read(uint64_t offset, void* data, size_t size) {
  // Writes the client posted before this read are in the model's queues, due a link latency
  // after they arrived: the counters count them once the model has run that far.
  sc_core::sc_start(kSettle);
  const backends::DeviceCounters counters = backdoor_->counters();
  if (offset < backends::kBackdoorCounters || offset + size > sizeof counters) return EINVAL;
  std::memcpy(data, reinterpret_cast<const uint8_t*>(&counters) + offset, size);
  return 0;
}

int ServedDevice::backdoor_write(uint64_t offset, const void* data, size_t size) {
  if (offset == backends::kBackdoorFault && size == sizeof(backends::BackdoorFault)) {
    backends::BackdoorFault f;
    std::memcpy(&f, data, sizeof f);
    return backdoor_->inject_fault(f.qp, f.nth_request, f.flush_minor) ? 0 : EINVAL;
  }
  if (offset == backends::kBackdoorForceMsix && size == sizeof(uint32_t)) {
    uint32_t vector;
    std::memcpy(&vector, data, sizeof vector);
    backdoor_->force_msix(vector);
    return 0;
  }
  return EINVAL;
}

namespace {

// The device the signal handler stops: set only while it runs.
std::atomic<ServedDevice*> g_served{nullptr};

}  // namespace

// One client: the model in this process. Client after client: each gets a device fresh from
// power-on in a process of its own (nothing a client left, its clock included, reaches the
// next), accepted from one listening socket this loop keeps, so that a client that connects
// meanwhile waits in its backlog for the next. The transaction log of client N > 1 goes to
// TRACE.N.
int serve_device(const testbench::SimConfig& config, const std::string& socket_path, const ServeOptions& options,
                 const std::function<void()>& listening) {
  testbench::check_servable(config);
  ServeOptions one = options;
  pcie::UniqueFd listener;  // unless one was lent (a server child's)
  if (one.listen_fd < 0) {
    try {
      listener = pcie::vfio_user::listen_unix(socket_path);
    } catch (const pcie::PciTransportError& e) {
      throw ServeRefused(e.what());
    }
    one.listen_fd = listener.get();
  }
  struct Unlink {
    const std::string* path;
    ~Unlink() {
      if (path) ::unlink(path->c_str());
    }
  } unlink_at_end{listener.valid() ? &socket_path : nullptr};
  const testbench::StopSignals signals([] {
    if (ServedDevice* served = g_served.load()) served->stop();
  });
  if (listening) listening();
  if (!options.serve_next_client) {
    ServedDevice served(config, socket_path, one);
    struct Running {
      explicit Running(ServedDevice& d) { g_served = &d; }
      ~Running() { g_served = nullptr; }
    } running(served);
    served.run();
    return signals.caught();
  }
  for (unsigned client = 1; !signals.caught(); client++) {
    if (!options.trace_path.empty() && client > 1) {
      one.trace_format = options.trace_format.value_or(trace::TraceLog::format_for(options.trace_path));
      one.trace_path = options.trace_path + "." + std::to_string(client);
    }
    ServerChild child(config, one, socket_path);
    std::optional<std::string> how;
    while (!signals.caught() && !(how = child.poll())) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (how && !how->empty()) throw std::runtime_error("the device server for client " + std::to_string(client) + " ended with " + *how);
  }
  return signals.caught();
}

}  // namespace irdma_sim::system
