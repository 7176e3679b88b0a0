// The vfio-user client against the server over a real socket, with the toy device behind
// it: negotiation, regions and the shared page, the slow path, DMA both ways with and
// without an fd, MSI-X eventfds, reset, posted writes and threads.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <numeric>
#include <thread>

#include "driver/backends/vfio_user/client.h"
#include "tests/cpp/driver/backends/vfio_user_toy_device.h"

namespace {

using namespace vfio_user_test;
using pcie::vfio_user::VfioUserClient;
using pcie::vfio_user::VfioUserClientOptions;
using pcie::vfio_user::VfioUserError;

uint32_t read32(VfioUserClient& c, uint64_t offset) {
  uint32_t v = 0;
  c.region_read(0, offset, &v, 4);
  return v;
}
void write32(VfioUserClient& c, uint64_t offset, uint32_t v) { c.region_write(0, offset, &v, 4); }
void write64(VfioUserClient& c, uint64_t offset, uint64_t v) { c.region_write(0, offset, &v, 8); }

// Whether the eventfd fires within `timeout_ms`; reading it clears it.
bool fired(int eventfd_fd, int timeout_ms = 2000) {
  pollfd p{eventfd_fd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) != 1) return false;
  uint64_t count;
  return ::read(eventfd_fd, &count, sizeof(count)) == sizeof(count);
}

struct EventFds {
  explicit EventFds(size_t n) {
    for (size_t i = 0; i < n; ++i) fds.push_back(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  }
  ~EventFds() {
    for (int fd : fds) ::close(fd);
  }
  std::vector<int> fds;
};

// Client memory backed by a memfd, as the driver's DMA pool makes it.
struct MemfdBuffer {
  explicit MemfdBuffer(size_t n) : size(n) {
    fd = ::memfd_create("dma", MFD_CLOEXEC);
    if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(n)) != 0) throw std::runtime_error("memfd");
    data = static_cast<uint8_t*>(::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  }
  ~MemfdBuffer() {
    ::munmap(data, size);
    ::close(fd);
  }
  size_t size;
  int fd;
  uint8_t* data;
};

void expect_pattern(const uint8_t* p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], static_cast<uint8_t>(seed + i)) << "byte " << i;
}

TEST(VfioUserClient, NegotiatesVersionAndRecordsTheServersLimits) {
  VfioUserServerOptions options;
  options.max_msg_fds = 3;
  options.max_data_xfer_size = 4000;
  ServedToy toy(options);
  VfioUserClient client(toy.path());
  EXPECT_EQ(client.server_version().major, 0);
  EXPECT_EQ(client.server_version().minor, 2);
  EXPECT_EQ(client.server_version().capabilities.max_msg_fds, 3u);
  EXPECT_EQ(client.server_version().capabilities.max_data_xfer_size, 4000u);
  EXPECT_TRUE(toy.server.client_connected());
}

TEST(VfioUserClient, DeviceAndRegionInfo) {
  ServedToy toy;
  VfioUserClient client(toy.path());
  pcie::DeviceInfo info = client.device_info();
  EXPECT_EQ(info.flags, vfio::kDeviceFlagPci | vfio::kDeviceFlagReset);
  EXPECT_EQ(info.num_regions, 9u);
  EXPECT_EQ(info.num_irqs, 5u);

  const pcie::RegionInfo& bar0 = client.region(0);
  EXPECT_EQ(bar0.size, kPage);
  EXPECT_EQ(bar0.flags, vfio::kRegionFlagRead | vfio::kRegionFlagWrite);
  EXPECT_TRUE(bar0.mmap_areas.empty());
  EXPECT_EQ(client.region(1).size, 0u) << "absent BAR";
  EXPECT_EQ(client.region(vfio::kConfigRegionIndex).size, 256u);

  const pcie::RegionInfo& bar2 = client.region(2);
  EXPECT_EQ(bar2.size, 2 * kPage);
  EXPECT_EQ(bar2.flags, vfio::kRegionFlagRead | vfio::kRegionFlagWrite | vfio::kRegionFlagMmap | vfio::kRegionFlagCaps);
  ASSERT_EQ(bar2.mmap_areas.size(), 1u);
  EXPECT_EQ(bar2.mmap_areas[0].offset, kPage);
  EXPECT_EQ(bar2.mmap_areas[0].size, kPage);
  ASSERT_NE(bar2.mmap_areas[0].ptr, nullptr);
  EXPECT_EQ(&client.region(2), &bar2) << "queried once, kept";

  EXPECT_THROW(client.region(9), VfioUserError) << "beyond num_regions";
  pcie::IrqInfo msix = client.irq_info(vfio::kMsixIrqIndex);
  EXPECT_EQ(msix.count, kMsixVectors);
  EXPECT_TRUE(msix.flags & vfio::kIrqInfoEventfd);
  EXPECT_EQ(client.irq_info(vfio::kIntxIrqIndex).count, 0u);
}

TEST(VfioUserClient, SharedPageIsTheSameMemoryOnBothSides) {
  ServedToy toy;
  VfioUserClient client(toy.path());
  auto* page = static_cast<volatile uint32_t*>(client.region(2).mmap_areas[0].ptr);
  page[5] = 0xC0FFEE;
  EXPECT_EQ(toy.device.shared_word(5), 0xC0FFEEu);
  toy.device.set_shared_word(6, 0xBEEF);
  EXPECT_EQ(page[6], 0xBEEFu);
  uint32_t slow = 0;
  client.region_read(2, kPage + 5 * 4, &slow, 4);
  EXPECT_EQ(slow, 0xC0FFEEu) << "the slow path reaches the shared page too";
}

TEST(VfioUserClient, SlowPathRoundTrips) {
  ServedToy toy;
  VfioUserClient client(toy.path(), waiting_writes());
  EXPECT_EQ(read32(client, reg::kId), kToyId);
  write32(client, reg::kScratch, 0xA5A5F00D);
  EXPECT_EQ(read32(client, reg::kScratch), 0xA5A5F00Du);
  write64(client, reg::kDmaAddress, 0x1122334455667788ull);
  uint64_t v = 0;
  client.region_read(0, reg::kDmaAddress, &v, 8);
  EXPECT_EQ(v, 0x1122334455667788ull);

  uint32_t ids = 0;
  client.region_read(vfio::kConfigRegionIndex, 0, &ids, 4);
  EXPECT_EQ(ids, 0x15928086u);

  // What the device refuses comes back as its errno.
  uint16_t half = 1;
  try {
    client.region_write(0, reg::kScratch, &half, 2);
    FAIL() << "a 2-byte register write was taken";
  } catch (const VfioUserError& e) {
    EXPECT_EQ(e.error_no(), EINVAL);
  }
  try {
    write32(client, reg::kId, 0);
    FAIL() << "the read-only id was written";
  } catch (const VfioUserError& e) {
    EXPECT_EQ(e.error_no(), EPERM);
  }
  try {
    client.region_read(0, kPage - 2, &v, 4);
    FAIL() << "a read past the end of BAR0 was served";
  } catch (const VfioUserError& e) {
    EXPECT_EQ(e.error_no(), EINVAL);
  }
  EXPECT_EQ(read32(client, reg::kScratch), 0xA5A5F00Du) << "errors leave the connection usable";
}

TEST(VfioUserClient, LargeAccessesSplitAtTheServersTransferLimit) {
  VfioUserServerOptions options;
  options.max_data_xfer_size = 1000;  // a 4 KiB message would be refused whole
  ServedToy toy(options);
  VfioUserClient client(toy.path(), waiting_writes());
  std::vector<uint8_t> out(kPage), in(kPage);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 7);
  client.region_write(2, 0, out.data(), out.size());
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(toy.device.trapped_byte(i), out[i]);
  client.region_read(2, 0, in.data(), in.size());
  EXPECT_EQ(in, out);
}

TEST(VfioUserClient, DmaThroughASharedFd) {
  ServedToy toy;
  VfioUserClient client(toy.path(), waiting_writes());
  EventFds irq(kMsixVectors);
  client.set_irq_eventfds(vfio::kMsixIrqIndex, 0, irq.fds);
  MemfdBuffer buffer(2 * kPage);
  constexpr uint64_t kIova = 0x100000;
  client.dma_map(buffer.data, buffer.size, kIova, buffer.fd, 0);
  EXPECT_EQ(toy.server.dma_map_count(), 1u);
  EXPECT_NE(toy.server.dma_pointer(kIova + 16, 64), nullptr) << "the server mapped the fd";
  EXPECT_EQ(toy.server.dma_pointer(kIova + buffer.size - 8, 64), nullptr) << "runs past the map";

  write64(client, reg::kDmaAddress, kIova + 100);
  write32(client, reg::kDmaLength, 5000);  // crosses the page boundary
  write32(client, reg::kDoorbell, 7);
  expect_pattern(buffer.data + 100, 5000, 7);
  EXPECT_EQ(buffer.data[99], 0);
  EXPECT_TRUE(fired(irq.fds[1])) << "doorbell raises MSI-X 1";
  EXPECT_FALSE(fired(irq.fds[0], 0));

  write32(client, reg::kChecksum, 1);
  uint32_t expect = 0;
  for (size_t i = 0; i < 5000; ++i) expect += static_cast<uint8_t>(7 + i);
  EXPECT_EQ(read32(client, reg::kSum), expect) << "the device read the buffer back";
  EXPECT_EQ(toy.device.maps_seen, 1);

  client.dma_unmap(kIova, buffer.size);
  EXPECT_EQ(toy.server.dma_map_count(), 0u);
  EXPECT_EQ(toy.device.unmaps_seen, 1);
  write32(client, reg::kDoorbell, 8);
  EXPECT_EQ(read32(client, reg::kDmaStatus), static_cast<uint32_t>(EFAULT)) << "no DMA after the unmap";
}

TEST(VfioUserClient, DmaWithoutAnFdGoesThroughMessagesSplitAtTheClientsLimit) {
  ServedToy toy;
  VfioUserClientOptions options;
  options.max_data_xfer_size = 1024;
  VfioUserClient client(toy.path(), waiting_writes(options));
  EventFds irq(kMsixVectors);
  client.set_irq_eventfds(vfio::kMsixIrqIndex, 0, irq.fds);
  std::vector<uint8_t> memory(3 * kPage);
  constexpr uint64_t kIova = 0x200000;
  client.dma_map(memory.data(), memory.size(), kIova, -1, 0);
  EXPECT_EQ(toy.server.dma_pointer(kIova, 4), nullptr) << "nothing to map without an fd";

  // The server sends DMA_WRITEs while the client waits for its REGION_WRITE reply.
  write64(client, reg::kDmaAddress, kIova + 8);
  write32(client, reg::kDmaLength, 5000);
  write32(client, reg::kDoorbell, 200);
  expect_pattern(memory.data() + 8, 5000, 200);
  EXPECT_TRUE(fired(irq.fds[1]));

  write32(client, reg::kChecksum, 1);
  uint32_t expect = 0;
  for (size_t i = 0; i < 5000; ++i) expect += static_cast<uint8_t>(200 + i);
  EXPECT_EQ(read32(client, reg::kSum), expect) << "DMA_READ brought the bytes";

  // Beyond the map: the client refuses; the device sees EFAULT.
  write64(client, reg::kDmaAddress, kIova + memory.size() - 4);
  write32(client, reg::kDoorbell, 1);
  EXPECT_EQ(read32(client, reg::kDmaStatus), static_cast<uint32_t>(EFAULT));
}

TEST(VfioUserClient, ReadOnlyMapRefusesDeviceWrites) {
  ServedToy toy;
  VfioUserClient client(toy.path());
  std::vector<uint8_t> memory(kPage);
  client.dma_map(memory.data(), memory.size(), 0x300000, -1, 0, vfio::kDmaFlagRead);
  write64(client, reg::kDmaAddress, 0x300000);
  write32(client, reg::kDmaLength, 16);
  write32(client, reg::kDoorbell, 1);
  EXPECT_EQ(read32(client, reg::kDmaStatus), static_cast<uint32_t>(EACCES));
  EXPECT_EQ(memory[0], 0);
}

TEST(VfioUserClient, ServesDeviceDmaWhileIdle) {
  ServedToy toy;
  VfioUserClient client(toy.path());
  std::vector<uint8_t> memory(kPage);
  client.dma_map(memory.data(), memory.size(), 0x400000, -1, 0);
  const uint8_t pattern[4] = {9, 8, 7, 6};
  std::atomic<bool> written{false};
  std::thread device_thread([&] {
    toy.server.dma_write(0x400010, pattern, sizeof(pattern));
    written = true;
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (!written && std::chrono::steady_clock::now() < deadline) client.process_server_requests(50);
  device_thread.join();
  ASSERT_TRUE(written);
  EXPECT_EQ(memory[0x10], 9);
  EXPECT_EQ(memory[0x13], 6);
}

TEST(VfioUserClient, DmaMapOverlapsAreRefused) {
  ServedToy toy;
  VfioUserClient client(toy.path());
  std::vector<uint8_t> memory(2 * kPage);
  client.dma_map(memory.data(), kPage, 0x10000, -1, 0);
  try {
    client.dma_map(memory.data() + kPage, kPage, 0x10000 + kPage / 2, -1, 0);
    FAIL() << "overlapping map accepted";
  } catch (const VfioUserError& e) {
    EXPECT_EQ(e.error_no(), EEXIST);
  }
  client.dma_map(memory.data() + kPage, kPage, 0x10000 + kPage, -1, 0);  // adjacent is fine
  EXPECT_EQ(toy.server.dma_map_count(), 2u);
  try {
    client.dma_unmap(0x10000, 2 * kPage);
    FAIL() << "unmap of two maps as one accepted";
  } catch (const VfioUserError& e) {
    EXPECT_EQ(e.error_no(), EINVAL);
  }
}

TEST(VfioUserClient, MsixVectorsReachTheirOwnEventfdsThroughChunkedSetIrqs) {
  VfioUserServerOptions options;
  options.max_msg_fds = 4;  // 12 vectors need 3 messages
  ServedToy toy(options);
  VfioUserClient client(toy.path());
  EventFds irq(kMsixVectors);
  client.set_irq_eventfds(vfio::kMsixIrqIndex, 0, irq.fds);
  for (uint32_t v = 0; v < kMsixVectors; ++v) {
    write32(client, reg::kFireVector, v);
    EXPECT_EQ(read32(client, reg::kFired), 1u) << "vector " << v;
    for (uint32_t other = 0; other < kMsixVectors; ++other)
      EXPECT_EQ(fired(irq.fds[other], other == v ? 2000 : 0), other == v) << "fired " << v << ", looked at " << other;
  }

  // -1 takes one vector's eventfd away; the others keep theirs.
  client.set_irq_eventfds(vfio::kMsixIrqIndex, 5, {-1});
  write32(client, reg::kFireVector, 5);
  EXPECT_EQ(read32(client, reg::kFired), 0u);
  EXPECT_FALSE(fired(irq.fds[5], 0));
  write32(client, reg::kFireVector, 6);
  EXPECT_TRUE(fired(irq.fds[6]));

  client.disable_irqs(vfio::kMsixIrqIndex);
  write32(client, reg::kFireVector, 6);
  EXPECT_EQ(read32(client, reg::kFired), 0u);

  try {
    client.set_irq_eventfds(vfio::kMsixIrqIndex, kMsixVectors - 1, {irq.fds[0], irq.fds[1]});
    FAIL() << "vectors beyond the count accepted";
  } catch (const VfioUserError& e) {
    EXPECT_EQ(e.error_no(), EINVAL);
  }
}

TEST(VfioUserClient, ResetKeepsMapsAndEventfds) {
  ServedToy toy;
  VfioUserClient client(toy.path());
  EventFds irq(kMsixVectors);
  client.set_irq_eventfds(vfio::kMsixIrqIndex, 0, irq.fds);
  MemfdBuffer buffer(kPage);
  client.dma_map(buffer.data, buffer.size, 0x100000, buffer.fd, 0);
  write32(client, reg::kScratch, 42);
  client.reset();
  EXPECT_EQ(toy.device.resets, 1);
  EXPECT_EQ(read32(client, reg::kScratch), 0u);
  EXPECT_EQ(toy.server.dma_map_count(), 1u);
  write32(client, reg::kFireVector, 3);
  EXPECT_TRUE(fired(irq.fds[3]));
}

TEST(VfioUserClient, PostedWritesArriveInOrderBeforeTheNextReply) {
  ServedToy toy;
  VfioUserClientOptions options;
  options.posted_writes = true;
  VfioUserClient client(toy.path(), options);
  for (uint32_t i = 1; i <= 200; ++i) write32(client, reg::kCounter, i);
  EXPECT_EQ(read32(client, reg::kCounter), 200u * 201 / 2);
}

TEST(VfioUserClient, ThreadsShareOneClient) {
  ServedToy toy;
  VfioUserClient client(toy.path());
  auto worker = [&](uint64_t offset, uint32_t base) {
    for (uint32_t i = 0; i < 300; ++i) {
      write32(client, offset, base + i);
      ASSERT_EQ(read32(client, offset), base + i);
    }
  };
  std::thread a(worker, reg::kScratch, 0x10000);
  std::thread b(worker, reg::kDmaLength, 0x20000);
  for (int i = 0; i < 300; ++i) write32(client, reg::kCounter, 1);
  a.join();
  b.join();
  EXPECT_EQ(read32(client, reg::kCounter), 300u);
}

TEST(VfioUserClient, WaitsForAServerThatIsStarting) {
  std::string path = socket_path("late");
  std::unique_ptr<VfioUserClient> client;
  std::thread connecting([&] { client = std::make_unique<VfioUserClient>(path); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ToyDevice device;
  VfioUserServer server(device, path);
  device.attach(&server);
  std::thread serving([&] { server.run(); });
  connecting.join();
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(read32(*client, reg::kId), kToyId);
  server.stop();
  serving.join();
}

// irdma-sim serve's loop: one-client servers, one after the other, on a listening socket
// the loop lends each. A client that connected while the first was serving waits in the
// backlog and is the second's; the path stays, the lender's.
TEST(VfioUserClient, AClientWaitingInALentListenersBacklogIsTheNextServersClient) {
  std::string path = socket_path("lent");
  pcie::UniqueFd listener = pcie::vfio_user::listen_unix(path);
  std::unique_ptr<VfioUserClient> clients[2];
  std::atomic<bool> connected[2] = {false, false};
  std::string errors[2];
  std::thread connecting[2];
  for (int i = 0; i < 2; i++)
    connecting[i] = std::thread([&, i] {
      try {
        clients[i] = std::make_unique<VfioUserClient>(path);
        connected[i] = true;
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  VfioUserServerOptions options;
  options.serve_next_client = false;
  options.listen_fd = listener.get();
  uint32_t ids[2] = {};
  for (int round = 0; round < 2; round++) {
    ToyDevice device;
    VfioUserServer server(device, path, options);
    device.attach(&server);
    std::thread serving([&] { server.run(); });
    // The client this server accepted is the one whose connect returns now.
    int served = -1;
    for (int t = 0; t < 5000 && served < 0; t++) {
      for (int i = 0; i < 2; i++)
        if (connecting[i].joinable() && connected[i]) served = i;
      if (served < 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (served >= 0) {
      connecting[served].join();
      ids[round] = read32(*clients[served], reg::kId);
      clients[served].reset();  // it leaves: the server is done
    }
    serving.join();
    EXPECT_TRUE(std::filesystem::exists(path)) << "a one-client server unlinked a lent socket";
  }
  for (std::thread& t : connecting)
    if (t.joinable()) t.join();
  EXPECT_EQ(ids[0], kToyId) << errors[0] << errors[1];
  EXPECT_EQ(ids[1], kToyId) << "the client waiting in the backlog was dropped: " << errors[0] << errors[1];
  ::unlink(path.c_str());
}

TEST(VfioUserClient, NobodyListeningIsAClearErrorWithinTheConnectTimeout) {
  VfioUserClientOptions options;
  options.connect_timeout_ms = 150;
  auto start = std::chrono::steady_clock::now();
  try {
    VfioUserClient client("/tmp/vfu-nobody-here.sock", options);
    FAIL() << "connected to nothing";
  } catch (const pcie::PciTransportError& e) {
    EXPECT_NE(std::string(e.what()).find("nobody accepted"), std::string::npos) << e.what();
  }
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(150));
  EXPECT_LT(took, std::chrono::seconds(2));
}

}  // namespace
