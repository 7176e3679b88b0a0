// Shared by the PCIe backend tests: the toy vfio-user device and a client to reach it.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <thread>

#include "driver/backends/vfio_user/client.h"
#include "tests/cpp/driver/backends/vfio_user_toy_device.h"

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

// A transport that passes every call on to another and counts them; `refuse` makes the
// named operations throw as a transport does when the device refuses.
class CountingTransport final : public pcie::PciTransport {
 public:
  explicit CountingTransport(pcie::PciTransport& inner) : inner_(inner) {}

  pcie::DeviceInfo device_info() override { return inner_.device_info(); }
  const pcie::RegionInfo& region(uint32_t index) override { return inner_.region(index); }
  void region_read(uint32_t index, uint64_t offset, void* data, size_t size) override {
    ++region_reads;
    inner_.region_read(index, offset, data, size);
  }
  void region_write(uint32_t index, uint64_t offset, const void* data, size_t size) override {
    ++region_writes;
    inner_.region_write(index, offset, data, size);
  }
  pcie::IrqInfo irq_info(uint32_t index) override {
    check("irq_info");
    return inner_.irq_info(index);
  }
  void set_irq_eventfds(uint32_t index, uint32_t start, const std::vector<int>& eventfds) override {
    ++set_irq_calls;
    check("set_irq_eventfds");
    inner_.set_irq_eventfds(index, start, eventfds);
  }
  void disable_irqs(uint32_t index) override { inner_.disable_irqs(index); }
  void dma_map(void* cpu_address, uint64_t size, uint64_t iova, int fd, uint64_t fd_offset, uint32_t flags) override {
    inner_.dma_map(cpu_address, size, iova, fd, fd_offset, flags);
  }
  void dma_unmap(uint64_t iova, uint64_t size) override {
    check("dma_unmap");
    inner_.dma_unmap(iova, size);
  }
  void reset() override { inner_.reset(); }
  std::vector<pcie::IovaRange> iova_ranges() const override {
    return iommu_ranges.empty() ? inner_.iova_ranges() : iommu_ranges;
  }

  std::atomic<int> region_reads{0}, region_writes{0}, set_irq_calls{0};
  std::string refuse;  // an operation's name
  std::vector<pcie::IovaRange> iommu_ranges;  // as an IOMMU would report them; empty: the inner's

 private:
  void check(const char* operation) {
    if (refuse == operation) throw pcie::PciTransportError(std::string("refused ") + operation);
  }
  pcie::PciTransport& inner_;
};

inline std::unique_ptr<VfioUserClient> connect(const ServedToy& toy, VfioUserClientOptions options = {}) {
  return std::make_unique<VfioUserClient>(toy.path(), options);
}

}  // namespace pcie_test
