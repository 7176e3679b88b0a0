// A toy PCI function for the vfio-user tests and benchmarks, served by VfioUserServer on a
// thread of its own.
//   BAR0 (4 KiB, trapped, 4/8-byte accesses only): registers below.
//   BAR2 (8 KiB): page 0 trapped plain memory, page 1 a memfd page mmapped by both sides;
//     the device polls its word 0 (doorbell) and on a change echoes it to word 1 and
//     signals MSI-X vector 0.
//   MSI-X: 12 vectors.
//   Config space: ids 8086:1592, a capability list with power management at 0x40 and
//     MSI-X at 0x50 (table and PBA in BAR2 page 0); ToyLayout takes parts away.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "driver/backends/vfio_user/client.h"

#include "driver/backends/pci_transport.h"
#include "model/platform/vfio_user_server.h"

namespace vfio_user_test {

namespace vfio = pcie::vfio;
using irdma_sim::platform::VfioUserEndpoint;
using irdma_sim::platform::VfioUserRegion;
using irdma_sim::platform::VfioUserServer;
using irdma_sim::platform::VfioUserServerOptions;

namespace reg {
constexpr uint64_t kId = 0x00;         // RO
constexpr uint64_t kDmaAddress = 0x10;  // u64 IOVA
constexpr uint64_t kDmaLength = 0x18;
constexpr uint64_t kDoorbell = 0x1C;   // write seed s: DMA-write bytes (s + i) & 0xff, then MSI-X 1
constexpr uint64_t kScratch = 0x20;
constexpr uint64_t kFireVector = 0x24;  // write n: signal MSI-X n; kFired reads 1 if it had an eventfd
constexpr uint64_t kFired = 0x28;
constexpr uint64_t kChecksum = 0x2C;   // write: DMA-read the buffer, sum its bytes into kSum
constexpr uint64_t kSum = 0x30;
constexpr uint64_t kCounter = 0x34;    // each write adds its value
constexpr uint64_t kHook = 0x38;       // write: calls ToyDevice::on_hook (die, hang)
constexpr uint64_t kDmaStatus = 0x3C;  // errno of the last device DMA, 0 = fine
}  // namespace reg
constexpr uint32_t kMaxDmaLength = 1u << 20;  // the device's DMA buffer

constexpr uint32_t kToyId = 0x1234ABCD;
constexpr uint32_t kMsixVectors = 12;
constexpr uint64_t kPage = 4096;
constexpr uint8_t kPmCap = 0x40;
constexpr uint8_t kMsixCap = 0x50;

// What the function has, for tests of a host that must notice what is missing.
struct ToyLayout {
  bool bar0 = true;
  bool msix_capability = true;
  uint16_t msix_table_size = kMsixVectors;  // as the capability says; the server signals kMsixVectors
  bool error_irq = true;  // VFIO's ERR index: one
};

class ToyDevice final : public VfioUserEndpoint {
 public:
  explicit ToyDevice(ToyLayout layout = {}) : layout_(layout) {
    memfd_ = ::memfd_create("toy-bar2", MFD_CLOEXEC);
    if (memfd_ < 0 || ::ftruncate(memfd_, 2 * kPage) != 0) throw std::runtime_error("memfd");
    shared_ = static_cast<uint32_t*>(::mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, memfd_, kPage));
    if (shared_ == MAP_FAILED) throw std::runtime_error("mmap");
    reset();
  }
  ~ToyDevice() override {
    ::munmap(shared_, kPage);
    ::close(memfd_);
  }
  void attach(VfioUserServer* server) { server_ = server; }

  uint32_t config_space_size() const override { return 256; }
  std::vector<VfioUserRegion> regions() const override {
    VfioUserRegion bar0{0, kPage, vfio::kRegionFlagRead | vfio::kRegionFlagWrite, -1, 0, {}};
    VfioUserRegion bar2{2, 2 * kPage, vfio::kRegionFlagRead | vfio::kRegionFlagWrite, memfd_, 0, {{kPage, kPage}}};
    if (!layout_.bar0) return {bar2};
    return {bar0, bar2};
  }
  uint32_t irq_count(uint32_t index) const override {
    return index == vfio::kMsixIrqIndex ? kMsixVectors : index == vfio::kErrIrqIndex && layout_.error_irq ? 1 : 0;
  }

  int config_read(uint64_t offset, void* data, size_t size) override {
    if (int error = config_read_error.load()) return error;
    std::memcpy(data, config_ + offset, size);
    return 0;
  }
  int config_write(uint64_t offset, const void* data, size_t size) override {
    if (offset < 4) return EPERM;  // ids are read-only
    std::memcpy(config_ + offset, data, size);
    return 0;
  }

  int region_read(uint32_t index, uint64_t offset, void* data, size_t size) override {
    if (index == 2) {
      bar2_copy(offset, size, [&](uint8_t* bar, size_t done, size_t n) {
        std::memcpy(static_cast<uint8_t*>(data) + done, bar, n);
      });
      return 0;
    }
    if ((size != 4 && size != 8) || offset % 4) return EINVAL;
    std::memcpy(data, regs_ + offset, size);
    return 0;
  }

  int region_write(uint32_t index, uint64_t offset, const void* data, size_t size) override {
    if (index == 2) {
      bar2_copy(offset, size, [&](uint8_t* bar, size_t done, size_t n) {
        std::memcpy(bar, static_cast<const uint8_t*>(data) + done, n);
      });
      return 0;
    }
    if ((size != 4 && size != 8) || offset % 4) return EINVAL;
    if (offset == reg::kId) return EPERM;
    uint32_t value;
    std::memcpy(&value, data, 4);
    if (offset == reg::kCounter) {
      set32(reg::kCounter, get32(reg::kCounter) + value);
      return 0;
    }
    std::memcpy(regs_ + offset, data, size);
    if (offset == reg::kDoorbell) ring_doorbell(value);
    if (offset == reg::kFireVector) set32(reg::kFired, server_->trigger_irq(vfio::kMsixIrqIndex, value) ? 1 : 0);
    if (offset == reg::kChecksum) checksum();
    if (offset == reg::kHook && on_hook) on_hook();
    return 0;
  }

  void reset() override {
    std::memset(regs_, 0, sizeof(regs_));
    std::memset(config_, 0, sizeof(config_));
    set32(reg::kId, kToyId);
    uint32_t ids = 0x15928086;  // vendor 8086, device 1592
    std::memcpy(config_, &ids, 4);
    if (layout_.msix_capability) {
      config_[0x06] = 0x10;  // PCI_STATUS_CAP_LIST
      config_[0x34] = kPmCap;
      config_[kPmCap] = 0x01;  // power management, then MSI-X
      config_[kPmCap + 1] = kMsixCap;
      config_[kMsixCap] = 0x11;
      const uint16_t control = uint16_t(layout_.msix_table_size - 1);
      const uint32_t table = 2, pba = 0x800 | 2;  // BIR 2
      std::memcpy(config_ + kMsixCap + 2, &control, 2);
      std::memcpy(config_ + kMsixCap + 4, &table, 4);
      std::memcpy(config_ + kMsixCap + 8, &pba, 4);
    }
    ++resets;
  }

  void dma_mapped(uint64_t, uint64_t, uint32_t) override { ++maps_seen; }
  void dma_unmapped(uint64_t, uint64_t) override { ++unmaps_seen; }

  // The shared-page doorbell, as the device's poll loop sees it.
  void poll_shared_page() {
    uint32_t bell = __atomic_load_n(&shared_[0], __ATOMIC_ACQUIRE);
    if (bell == last_bell_) return;
    last_bell_ = bell;
    __atomic_store_n(&shared_[1], bell, __ATOMIC_RELEASE);
    server_->trigger_irq(vfio::kMsixIrqIndex, 0);
  }
  uint32_t shared_word(size_t i) const { return __atomic_load_n(&shared_[i], __ATOMIC_ACQUIRE); }
  void set_shared_word(size_t i, uint32_t v) { __atomic_store_n(&shared_[i], v, __ATOMIC_RELEASE); }
  uint8_t trapped_byte(size_t i) const { return bar2_trapped_[i]; }

  std::function<void()> on_hook;
  std::atomic<int> config_read_error{0};  // nonzero: config reads fail with this errno
  std::atomic<int> resets{-1};  // the constructor's reset is not counted
  std::atomic<int> maps_seen{0};
  std::atomic<int> unmaps_seen{0};

 private:
  // An access to BAR2 in its pieces: the trapped first page, then the shared second one (an
  // access may straddle them). `copy(where in BAR2, bytes done so far, bytes now)`.
  template <class Copy>
  void bar2_copy(uint64_t offset, size_t size, Copy copy) {
    const size_t trapped = offset < kPage ? std::min<size_t>(size, kPage - offset) : 0;
    if (trapped) copy(bar2_trapped_ + offset, 0, trapped);
    if (size > trapped)
      copy(reinterpret_cast<uint8_t*>(shared_) + (offset + trapped - kPage), trapped, size - trapped);
  }

  uint32_t get32(uint64_t offset) const {
    uint32_t v;
    std::memcpy(&v, regs_ + offset, 4);
    return v;
  }
  void set32(uint64_t offset, uint32_t v) { std::memcpy(regs_ + offset, &v, 4); }
  uint64_t dma_address() const {
    uint64_t v;
    std::memcpy(&v, regs_ + reg::kDmaAddress, 8);
    return v;
  }

  // A transfer longer than the device's buffer is refused (EINVAL in DMA_STATUS), as a
  // device refuses what it cannot hold; the DMA itself is the server's to bound.
  bool dma_length_fits() {
    if (get32(reg::kDmaLength) <= kMaxDmaLength) return true;
    set32(reg::kDmaStatus, EINVAL);
    return false;
  }

  void ring_doorbell(uint32_t seed) {
    if (!dma_length_fits()) return;
    std::vector<uint8_t> pattern(get32(reg::kDmaLength));
    for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(seed + i);
    try {
      server_->dma_write(dma_address(), pattern.data(), pattern.size());
      set32(reg::kDmaStatus, 0);
    } catch (const pcie::vfio_user::VfioUserError& e) {
      set32(reg::kDmaStatus, static_cast<uint32_t>(e.error_no()));
      return;
    }
    server_->trigger_irq(vfio::kMsixIrqIndex, 1);
  }

  void checksum() {
    if (!dma_length_fits()) return;
    std::vector<uint8_t> buffer(get32(reg::kDmaLength));
    try {
      server_->dma_read(dma_address(), buffer.data(), buffer.size());
      set32(reg::kDmaStatus, 0);
    } catch (const pcie::vfio_user::VfioUserError& e) {
      set32(reg::kDmaStatus, static_cast<uint32_t>(e.error_no()));
      return;
    }
    uint32_t sum = 0;
    for (uint8_t b : buffer) sum += b;
    set32(reg::kSum, sum);
  }

  const ToyLayout layout_;
  VfioUserServer* server_ = nullptr;
  int memfd_ = -1;
  uint32_t* shared_ = nullptr;  // BAR2 page 1, the device's own mapping
  uint32_t last_bell_ = 0;
  uint8_t regs_[kPage] = {};
  uint8_t bar2_trapped_[kPage] = {};
  uint8_t config_[256] = {};
};

// A unique short socket path (sun_path holds 107 bytes).
inline std::string socket_path(const char* tag) {
  static std::atomic<int> counter{0};
  return "/tmp/vfu-" + std::to_string(::getpid()) + "-" + tag + "-" + std::to_string(counter++) + ".sock";
}

// The toy device behind a server, served on a thread; between messages the thread polls
// the shared page (every `poll_ms`, or busily with 0).
class ServedToy {
 public:
  explicit ServedToy(VfioUserServerOptions options = {}, int poll_ms = 1, const char* tag = "toy",
                     ToyLayout layout = {})
      : device(layout), server(device, socket_path(tag), options) {
    device.attach(&server);
    thread_ = std::thread([this, poll_ms] {
      while (server.serve_one_message(poll_ms)) device.poll_shared_page();
      done = true;
    });
  }
  ~ServedToy() {
    server.stop();
    thread_.join();
  }
  const std::string& path() const { return server.socket_path(); }

  ToyDevice device;
  VfioUserServer server;
  std::atomic<bool> done{false};

 private:
  std::thread thread_;
};

// A client whose region writes wait for the server's reply, for tests of what a reply says
// (a refused write, a timeout) or of what a write did by the time it returns (a DMA the
// toy starts on it): a posted write's refusal reaches no one and its effect comes later.
inline pcie::vfio_user::VfioUserClientOptions waiting_writes(pcie::vfio_user::VfioUserClientOptions options = {}) {
  options.posted_writes = false;
  return options;
}

}  // namespace vfio_user_test
