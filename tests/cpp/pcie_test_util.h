// Shared by the PCIe backend tests: the toy vfio-user device and a client to reach it.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "driver/backends/vfio_user/client.h"
#include "tests/cpp/vfio_user_toy_device.h"

namespace pcie_test {

using namespace vfio_user_test;
using pcie::vfio_user::VfioUserClient;
using pcie::vfio_user::VfioUserClientOptions;

// Whether `condition` holds within `timeout_ms`.
inline bool eventually(const std::function<bool()>& condition, int timeout_ms = 2000) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

inline std::unique_ptr<VfioUserClient> connect(const ServedToy& toy, VfioUserClientOptions options = {}) {
  return std::make_unique<VfioUserClient>(toy.path(), options);
}

}  // namespace pcie_test
