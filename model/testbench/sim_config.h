// A whole simulated system's configuration: device, PCIe link, host, and the time
// synchronisation mode. Every field has a documented default (scenarios/README.md,
// "Configuration and its defaults").
#pragma once

#include <string>

#include "model/device/device_config.h"
#include "model/platform/host_config.h"
#include "model/platform/link_config.h"

namespace irdma_sim::testbench {

enum class SyncMode {
  // Every device step waits for simulated time and posted writes land when they arrive:
  // cycle-approximate and the default.
  approximate,
  // The device runs ahead by up to a quantum and writes land when issued: faster.
  loose,
};

// What the driver is told rather than what it finds (its module parameters, beside
// device.ceq_itr_us).
struct DriverConfig {
  uint32_t eq_watchdog_us = 0;  // missed-interrupt recovery's period; 0: off
  uint32_t cqp_timeout_ms = 5000;  // a CQP command without a completion this long: the device is given up
};

struct SimConfig {
  device::DeviceConfig device;
  DriverConfig driver;
  platform::LinkConfig link;
  platform::HostConfig host;
  SyncMode sync = SyncMode::approximate;
  double quantum_ns = 10000;  // loose mode only
};

}  // namespace irdma_sim::testbench
