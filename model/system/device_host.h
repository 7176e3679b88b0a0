// The device host: one process that owns a device and serves the uverbs of every
// application on the machine that opens it through the shim (driver/backends/uverbs_shim),
// as one NIC serves every process of a host. Each connection is one open of the device
// file, with its own ib_uverbs_file; commands run on the host (Host::run_on_host), so
// simulated time advances as the device works, and between them the host sleeps on its
// sockets. An application that dies closes its connection, and with it its file.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "driver/backends/unique_fd.h"
#include "driver/backends/uverbs_shim/wire.h"
#include "model/system/simulation.h"
#include "model/system/uverbs_process.h"
#include "model/testbench/run_checks.h"

namespace irdma_sim::system {

class DeviceHost {
 public:
  // Listens at `socket_path` (a stale socket there is replaced); throws std::runtime_error
  // when it cannot.
  DeviceHost(Simulation& host, const std::string& socket_path);
  ~DeviceHost();
  DeviceHost(const DeviceHost&) = delete;
  DeviceHost& operator=(const DeviceHost&) = delete;

  // Serves until `stop` returns true (asked at least every 100 ms).
  void serve(const std::function<bool()>& stop);

  // What it has served so far.
  struct counters {
    uint64_t clients = 0;          // opens of the device file
    uint64_t protocol_errors = 0;  // clients dropped for a message the protocol has not
    uint64_t commands = 0;         // writes of a command
    uint64_t commands_failed = 0;  // of those, answered with an error
    uint64_t mmaps = 0;
    uint64_t doorbells = 0;        // stores to mapped device pages, delivered as MMIO writes
  };
  const counters& served() const { return served_; }

 private:
  struct client;
  void accept_client();
  // False when the client has gone, or broke the protocol, and is to be dropped.
  bool serve_message(client& c);
  void drop(size_t index);
  bool ring(client& c, const std::vector<uverbs_wire::doorbell_store>& stores);

  Simulation& host_;
  std::string socket_path_;
  pcie::UniqueFd listener_;
  std::vector<std::unique_ptr<client>> clients_;
  counters served_;
};

// A host's report.json: what it served and what the system counted, on its clock. A
// documented contract (model/system/README.md): extend it, never break it.
std::string device_host_report(const DeviceHost::counters& served, const testbench::SystemCounters& sys,
                               double wall_s);

}  // namespace irdma_sim::system
