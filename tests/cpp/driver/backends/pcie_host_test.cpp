// PcieHost: the platform a driver gets over the vfio-user client, end to end (device DMA
// into the pool, then its MSI-X vector into the handler); the checks before it hands the
// platform out; and a server that dies under it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <string>
#include <vector>

#include "driver/backends/pcie/pcie_host.h"
#include "tests/cpp/driver/backends/pcie_test_util.h"

namespace {

using namespace pcie_test;
using pcie::PcieHost;
using pcie::PciTransportError;
using Clock = std::chrono::steady_clock;

TEST(PcieHost, GivesADriverThePlatformOfTheFunction) {
  ServedToy toy;
  PcieHost host(connect(toy));
  hal::Platform& hw = host.platform();
  EXPECT_EQ(hw.config.read16(hal::PCI_VENDOR_ID), 0x8086);
  EXPECT_EQ(hw.bar0.read32(reg::kId), kToyId);
  EXPECT_EQ(&hw.bar0, &host.bar0());

  // The device DMA-writes into a pool buffer and raises MSI-X 1; the handler sees the bytes.
  ASSERT_EQ(hw.irq.alloc_irq_vectors(2, 12), 12);
  hal::DmaBuffer buffer = hw.dma.alloc_coherent(256, 256);
  ASSERT_TRUE(buffer);
  std::atomic<bool> seen{false};
  std::vector<uint8_t> bytes;
  ASSERT_EQ(hw.irq.request_irq(1, [&](unsigned) {
    hal::dma_rmb();
    const auto* p = static_cast<const uint8_t*>(buffer.cpu);
    bytes.assign(p, p + buffer.size);
    seen = true;
  }), 0);
  hw.bar0.write64(reg::kDmaAddress, buffer.iova);
  hw.bar0.write32(reg::kDmaLength, uint32_t(buffer.size));
  hw.bar0.write32(reg::kDoorbell, 3);
  ASSERT_TRUE(eventually([&] { return seen.load(); }));
  for (size_t i = 0; i < bytes.size(); ++i) ASSERT_EQ(bytes[i], uint8_t(3 + i)) << "byte " << i;
  hw.irq.free_irq(1);
  hw.dma.free_coherent(buffer);
  EXPECT_EQ(host.dma().mapped_bytes(), 0u);

  const uint64_t before = hw.exec.now_ns();
  hw.exec.delay_ns(1000000);
  EXPECT_GE(hw.exec.now_ns() - before, 1000000u) << "execution is the OS's";
}

// The message of the PciTransportError constructing a host over `toy` throws.
std::string refusal(ServedToy& toy) {
  try {
    PcieHost host(connect(toy));
  } catch (const PciTransportError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(PcieHost, RefusesAFunctionItCannotDrive) {
  ServedToy no_bar0({}, 1, "nobar", ToyLayout{false, true, kMsixVectors});
  EXPECT_EQ(refusal(no_bar0), "pcie: the function has no BAR0");
  ServedToy no_msix({}, 1, "nomsix", ToyLayout{true, false, kMsixVectors});
  EXPECT_EQ(refusal(no_msix), "pcie: the function has no MSI-X capability");
  ServedToy silent;
  silent.device.config_read_error = EIO;
  EXPECT_NE(refusal(silent).find("pcie: the function's config space does not answer (vendor id reads 0xffff): config "
                                 "read of 2 bytes at 0"),
            std::string::npos)
      << refusal(silent);
  EXPECT_THROW(PcieHost(nullptr), PciTransportError);
}

// A toy server in a child process, so that it can die.
pid_t fork_toy_server(const std::string& path) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  try {
    ToyDevice device;
    VfioUserServer server(device, path);
    device.attach(&server);
    server.run();
  } catch (...) {
    ::_exit(2);
  }
  ::_exit(0);
}

TEST(PcieHost, AServerThatDiesLeavesAllOnesAndNothingHangs) {
  const std::string path = socket_path("dies");
  const pid_t child = fork_toy_server(path);
  ASSERT_GT(child, 0);
  VfioUserClientOptions options;
  options.reply_timeout_ms = 1000;
  auto host = std::make_unique<PcieHost>(std::make_unique<VfioUserClient>(path, options));
  hal::Platform& hw = host->platform();
  ASSERT_EQ(hw.irq.alloc_irq_vectors(1, 4), 4);
  hal::DmaBuffer held = hw.dma.alloc_coherent(64, 64);
  ASSERT_TRUE(held);
  EXPECT_EQ(hw.bar0.read32(reg::kId), kToyId);

  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  const auto start = Clock::now();
  EXPECT_EQ(hw.bar0.read32(reg::kId), 0xFFFFFFFFu);
  EXPECT_EQ(hw.bar0.read64(reg::kDmaAddress), ~0ull);
  hw.bar0.write32(reg::kScratch, 1);
  EXPECT_EQ(host->bar0().errors().count(), 3u);
  EXPECT_EQ(hw.config.read16(hal::PCI_VENDOR_ID), 0xFFFF);
  EXPECT_FALSE(hw.dma.alloc_coherent(4 << 20, 64)) << "a new block cannot be mapped";
  hw.dma.free_coherent(held);
  EXPECT_EQ(host->dma().mapped_bytes(), 0u) << "our memory goes even if the unmap cannot be sent";
  host.reset();
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(500));
}

}  // namespace
