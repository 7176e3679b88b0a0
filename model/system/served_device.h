// The device model served as a PCIe function over vfio-user, in a process of its own: the
// SystemC device behind a PCIe link whose host side is the client's memory; its regions
// (BAR0 registers and doorbells, BAR3 the MSI-X table, the configuration space, and the
// backdoor region) answered from the socket; its MSI-X vectors delivered to the client's
// eventfds. The model runs free against the wall clock: simulated time follows real time,
// and the device's work runs as soon as its simulated time has come.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <optional>
#include <string>

#include "model/device/irdma_device.h"
#include "model/platform/pcie_link.h"
#include "model/platform/remote_memory.h"
#include "model/platform/sim_mmio.h"
#include "model/platform/vfio_user_endpoint.h"
#include "model/platform/vfio_user_server.h"
#include "model/system/sim_backdoor.h"
#include "model/testbench/sim_config.h"
#include "model/trace/trace_log.h"

namespace irdma_sim::system {

struct ServeOptions {
  std::string trace_path;          // the device's transaction log ("": none)
  // Unset: TraceLog::format_for(trace_path). The logs of the clients after the first take
  // the first's format, at the first's path with ".N" after it.
  std::optional<trace::TraceLog::Format> trace_format;
  bool backdoor = true;            // offer the backdoor region; false: as silicon, none
  // Client after client, each with a device fresh from power-on; false: done when the first
  // client leaves.
  bool serve_next_client = true;
  int listen_fd = -1;  // a listening socket at the path to accept the client from (VfioUserServerOptions)
};

class ServedDevice final : public platform::VfioUserEndpoint {
 public:
  // Elaborates the model (SystemC allows it once per process) and listens at
  // `socket_path` for one client (options.serve_next_client is serve_device's). Throws
  // pcie::PciTransportError when the socket cannot be had, ScenarioError when `cfg` is not
  // servable (check_servable).
  ServedDevice(const testbench::SimConfig& cfg, const std::string& socket_path, const ServeOptions& options = {});
  ~ServedDevice() override;
  ServedDevice(const ServedDevice&) = delete;
  ServedDevice& operator=(const ServedDevice&) = delete;

  // Serves one client: until it leaves, or stop().
  void run();
  // From any thread or a signal handler.
  void stop();

  const std::string& socket_path() const { return server_->socket_path(); }

  // platform::VfioUserEndpoint
  uint32_t config_space_size() const override;
  std::vector<platform::VfioUserRegion> regions() const override;
  uint32_t irq_count(uint32_t irq_index) const override;
  int config_read(uint64_t offset, void* data, size_t size) override;
  int config_write(uint64_t offset, const void* data, size_t size) override;
  int region_read(uint32_t index, uint64_t offset, void* data, size_t size) override;
  int region_write(uint32_t index, uint64_t offset, const void* data, size_t size) override;
  // DEVICE_RESET: a function level reset of the model (IrdmaDevice::function_reset).
  void reset() override;

 private:
  int access(tlm::tlm_command cmd, uint32_t region, uint64_t offset, void* data, size_t size);
  int backdoor_read(uint64_t offset, void* data, size_t size);
  int backdoor_write(uint64_t offset, const void* data, size_t size);

  testbench::SimConfig cfg_;
  bool offer_backdoor_;
  std::string trace_path_;
  bool had_client_ = false;
  trace::TraceLog trace_;
  std::unique_ptr<platform::VfioUserServer> server_;
  std::unique_ptr<platform::RemoteMemory> memory_;
  std::unique_ptr<platform::PcieLink> link_;
  std::unique_ptr<device::IrdmaDevice> device_;
  std::unique_ptr<platform::SimMmio> port_;
  std::unique_ptr<SimBackdoor> backdoor_;
  std::atomic<bool> stop_{false};
};

// The socket cannot be served: it cannot be bound, or another server listens there.
class ServeRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `irdma-sim serve`: serves the device `config` describes at `socket_path` until SIGINT or
// SIGTERM (or the client leaves, without serve_next_client), calling `listening` once the
// socket listens. Returns the signal, or 0. Throws ScenarioError for a configuration a
// served model cannot carry and ServeRefused for the socket, both before `listening`; a
// server that fails later throws anything else.
int serve_device(const testbench::SimConfig& config, const std::string& socket_path, const ServeOptions& options,
                 const std::function<void()>& listening = {});

}  // namespace irdma_sim::system
