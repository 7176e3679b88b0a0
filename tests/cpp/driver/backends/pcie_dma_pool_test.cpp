// DmaPool over the vfio-user client and the toy device: alignment and zeroing, the device
// and the CPU on the same bytes through the server's mapping of our memfds, blocks shared
// and reused, a dedicated block above 2 MiB, the IOVA window and a refusing transport
// giving empty buffers, threads, and nothing left mapped at the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "driver/backends/pcie/dma_pool.h"
#include "driver/backends/pcie/pcie_bar.h"
#include "tests/cpp/driver/backends/pcie_test_util.h"

namespace {

using namespace pcie_test;
using pcie::DmaPool;
using pcie::DmaPoolOptions;
using pcie::PcieBar;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kBase = 4ull << 30;

bool all_zero(const hal::DmaBuffer& b) {
  const auto* p = static_cast<const uint8_t*>(b.cpu);
  for (size_t i = 0; i < b.size; ++i)
    if (p[i]) return false;
  return true;
}

TEST(DmaPool, AllocationsAreAlignedZeroedDisjointAndInsideTheWindow) {
  ServedToy toy;
  auto client = connect(toy);
  DmaPool pool(*client);
  const std::pair<size_t, size_t> requests[] = {{1, 1},       {100, 64},        {4096, 4096},   {3000, 256},
                                                {5, 8},       {64 << 10, 64 << 10}, {kMiB + 1, kMiB}, {200, 512}};
  std::vector<hal::DmaBuffer> buffers;
  for (auto [size, align] : requests) {
    hal::DmaBuffer b = pool.alloc_coherent(size, align);
    ASSERT_TRUE(b) << size;
    EXPECT_EQ(b.size, size);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.cpu) % align, 0u) << size;
    EXPECT_EQ(b.iova % align, 0u) << size;
    EXPECT_GE(b.iova, kBase);
    EXPECT_LE(b.iova + b.size - 1, DmaPoolOptions{}.dma_mask);
    EXPECT_TRUE(all_zero(b));
    std::memset(b.cpu, 0xA5, b.size);
    buffers.push_back(b);
  }
  for (size_t i = 0; i < buffers.size(); ++i)
    for (size_t j = i + 1; j < buffers.size(); ++j)
      EXPECT_TRUE(buffers[i].iova + buffers[i].size <= buffers[j].iova ||
                  buffers[j].iova + buffers[j].size <= buffers[i].iova)
          << i << " and " << j << " overlap";
  EXPECT_EQ(pool.allocation_count(), buffers.size());
  EXPECT_EQ(pool.block_count(), 2u) << "1 MiB + 1 aligned to 1 MiB no longer fits beside the rest";

  // Dirty memory handed out again comes back zeroed.
  hal::DmaBuffer dirty = buffers[2];
  pool.free_coherent(dirty);
  hal::DmaBuffer again = pool.alloc_coherent(4096, 4096);
  EXPECT_EQ(again.iova, dirty.iova);
  EXPECT_TRUE(all_zero(again));
  EXPECT_EQ(pool.errors().count(), 0u);
}

TEST(DmaPool, TheDeviceAndTheCpuSeeTheSameBytes) {
  ServedToy toy;
  auto client = connect(toy);
  PcieBar bar0(*client, 0);
  DmaPool pool(*client);
  hal::DmaBuffer b = pool.alloc_coherent(5000, 64);
  ASSERT_TRUE(b);
  EXPECT_NE(toy.server.dma_pointer(b.iova, b.size), nullptr) << "shared by fd, not through messages";

  auto* p = static_cast<uint8_t*>(b.cpu);
  uint32_t sum = 0;
  for (size_t i = 0; i < b.size; ++i) sum += p[i] = uint8_t(i * 13 + 1);
  bar0.write64(reg::kDmaAddress, b.iova);
  bar0.write32(reg::kDmaLength, uint32_t(b.size));
  bar0.write32(reg::kChecksum, 1);
  EXPECT_EQ(bar0.read32(reg::kDmaStatus), 0u);
  EXPECT_EQ(bar0.read32(reg::kSum), sum) << "the device read what the CPU wrote";

  bar0.write32(reg::kDoorbell, 40);
  EXPECT_EQ(bar0.read32(reg::kDmaStatus), 0u);
  for (size_t i = 0; i < b.size; ++i) ASSERT_EQ(p[i], uint8_t(40 + i)) << "byte " << i;
}

TEST(DmaPool, AllocationsShareABlockAndReuseFreedSpace) {
  ServedToy toy;
  auto client = connect(toy);
  DmaPool pool(*client);
  hal::DmaBuffer a = pool.alloc_coherent(4096, 64), b = pool.alloc_coherent(4096, 64);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(pool.block_count(), 1u);
  EXPECT_EQ(pool.mapped_bytes(), 2 * kMiB);
  EXPECT_EQ(toy.server.dma_map_count(), 1u);
  pool.free_coherent(a);
  hal::DmaBuffer c = pool.alloc_coherent(1000, 64);
  EXPECT_EQ(c.iova, a.iova) << "first fit takes the freed space";
  EXPECT_EQ(c.cpu, a.cpu);
  EXPECT_EQ(toy.device.maps_seen, 1) << "no new block was mapped";

  pool.free_coherent(b);
  pool.free_coherent(c);
  EXPECT_EQ(pool.allocation_count(), 0u);
  EXPECT_EQ(pool.block_count(), 0u) << "an empty block is unmapped";
  EXPECT_EQ(pool.mapped_bytes(), 0u);
  EXPECT_EQ(toy.server.dma_map_count(), 0u);
}

TEST(DmaPool, AnAllocationLargerThanABlockGetsOneOfItsOwn) {
  ServedToy toy;
  auto client = connect(toy);
  PcieBar bar0(*client, 0);
  DmaPool pool(*client);
  hal::DmaBuffer small = pool.alloc_coherent(64, 64);
  hal::DmaBuffer big = pool.alloc_coherent(3 * kMiB + 100, 4096);
  ASSERT_TRUE(small && big);
  EXPECT_EQ(pool.block_count(), 2u);
  EXPECT_EQ(pool.mapped_bytes(), 2 * kMiB + 3 * kMiB + 4096) << "rounded to a page, not to a block";
  EXPECT_EQ(toy.server.dma_map_count(), 2u) << "one map for the whole large block";
  EXPECT_EQ(big.iova % (2 * kMiB), 0u);
  EXPECT_TRUE(all_zero(big));

  // The device's DMA may run across the 2 MiB mark: it is one map.
  bar0.write64(reg::kDmaAddress, big.iova + 2 * kMiB - 100);
  bar0.write32(reg::kDmaLength, 300);
  bar0.write32(reg::kDoorbell, 9);
  EXPECT_EQ(bar0.read32(reg::kDmaStatus), 0u);
  EXPECT_EQ(static_cast<uint8_t*>(big.cpu)[2 * kMiB + 199], uint8_t(9 + 299));

  pool.free_coherent(big);
  EXPECT_EQ(pool.block_count(), 1u);
  EXPECT_EQ(pool.mapped_bytes(), 2 * kMiB);
  EXPECT_EQ(toy.server.dma_map_count(), 1u);
}

TEST(DmaPool, AFullIovaWindowGivesAnEmptyBuffer) {
  ServedToy toy;
  auto client = connect(toy);
  DmaPoolOptions options;
  options.dma_mask = kBase + 4 * kMiB - 1;  // two blocks
  DmaPool pool(*client, options);
  hal::DmaBuffer a = pool.alloc_coherent(2 * kMiB, 64), b = pool.alloc_coherent(2 * kMiB, 64);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(b.iova + b.size - 1, options.dma_mask) << "the window's last byte is usable";
  EXPECT_FALSE(pool.alloc_coherent(64, 64));
  EXPECT_NE(pool.errors().last().find("IOVA window"), std::string::npos) << pool.errors().last();
  EXPECT_FALSE(pool.alloc_coherent(8 * kMiB, 64)) << "larger than the whole window";
  EXPECT_EQ(pool.block_count(), 2u);

  pool.free_coherent(a);
  EXPECT_TRUE(pool.alloc_coherent(64, 64)) << "its IOVAs came back";
}

TEST(DmaPool, IovasStayInsideTheRangesTheIommuAccepts) {
  ServedToy toy;
  auto client = connect(toy);
  CountingTransport transport(*client);
  // Below the pool's base, a hole at 5 GiB + 2 MiB (a reserved region), a range past the
  // device's mask: only [5 GiB, 5 GiB + 2 MiB) and [5 GiB + 4 MiB, 5 GiB + 8 MiB) are usable.
  transport.iommu_ranges = {{0x10000, kBase - 1},
                            {5 * kBase / 4, 5 * kBase / 4 + 2 * kMiB - 1},
                            {5 * kBase / 4 + 4 * kMiB, 5 * kBase / 4 + 8 * kMiB - 1},
                            {1ull << 40, (1ull << 48) - 1}};
  DmaPool pool(transport);
  std::vector<hal::DmaBuffer> blocks;
  for (int i = 0; i < 3; ++i) {
    blocks.push_back(pool.alloc_coherent(2 * kMiB, 64));
    ASSERT_TRUE(blocks.back()) << i << ": " << pool.errors().last();
  }
  EXPECT_EQ(blocks[0].iova, 5 * kBase / 4);
  EXPECT_EQ(blocks[1].iova, 5 * kBase / 4 + 4 * kMiB) << "the reserved hole is skipped";
  EXPECT_EQ(blocks[2].iova, 5 * kBase / 4 + 6 * kMiB);
  EXPECT_FALSE(pool.alloc_coherent(64, 64)) << "nothing usable is left";
  EXPECT_NE(pool.errors().last().find("[0x140000000, 0x1401fffff], [0x140400000, 0x1407fffff]"), std::string::npos)
      << pool.errors().last();
  EXPECT_FALSE(pool.alloc_coherent(4 * kMiB, 64)) << "larger than any one range";

  transport.iommu_ranges = {{0x10000, kBase + kMiB - 1}};
  EXPECT_THROW(DmaPool none(transport), std::invalid_argument) << "no block fits above the base";
}

TEST(DmaPool, ATransportThatRefusesTheMapGivesAnEmptyBuffer) {
  VfioUserServerOptions server_options;
  server_options.max_dma_maps = 1;
  ServedToy toy(server_options);
  auto client = connect(toy);
  DmaPool pool(*client);
  hal::DmaBuffer a = pool.alloc_coherent(2 * kMiB, 64);
  ASSERT_TRUE(a);
  EXPECT_FALSE(pool.alloc_coherent(64, 64));
  EXPECT_NE(pool.errors().last().find("refused DMA_MAP: No space left on device"), std::string::npos) << pool.errors().last();
  EXPECT_EQ(pool.block_count(), 1u);
  EXPECT_EQ(pool.mapped_bytes(), 2 * kMiB);
  pool.free_coherent(a);
  EXPECT_TRUE(pool.alloc_coherent(64, 64)) << "nothing leaked from the refused block";
}

TEST(DmaPool, IovasTheDeviceMayStillHoldAreNotHandedOutAgain) {
  ServedToy toy;
  auto client = connect(toy);
  CountingTransport transport(*client);
  DmaPool pool(transport);
  hal::DmaBuffer a = pool.alloc_coherent(64, 64);
  transport.refuse = "dma_unmap";
  pool.free_coherent(a);
  EXPECT_EQ(pool.block_count(), 0u) << "our memory goes anyway";
  EXPECT_NE(pool.errors().last().find("refused dma_unmap"), std::string::npos) << pool.errors().last();
  transport.refuse.clear();
  hal::DmaBuffer b = pool.alloc_coherent(64, 64);
  ASSERT_TRUE(b) << pool.errors().last();
  EXPECT_NE(b.iova, a.iova);
}

TEST(DmaPool, BadRequestsAndForeignFreesChangeNothing) {
  ServedToy toy;
  auto client = connect(toy);
  DmaPool pool(*client);
  EXPECT_FALSE(pool.alloc_coherent(0, 64));
  EXPECT_FALSE(pool.alloc_coherent(64, 0));
  EXPECT_FALSE(pool.alloc_coherent(64, 48));
  EXPECT_EQ(pool.errors().count(), 3u);
  hal::DmaBuffer a = pool.alloc_coherent(256, 64);
  pool.free_coherent({});  // like kfree(NULL)
  pool.free_coherent({a.cpu, a.iova + 64, 64});
  pool.free_coherent({static_cast<uint8_t*>(a.cpu) + 64, a.iova, a.size});
  EXPECT_EQ(pool.errors().count(), 5u);
  EXPECT_EQ(pool.allocation_count(), 1u);
  pool.free_coherent(a);
  EXPECT_EQ(pool.allocation_count(), 0u);
  const DmaPoolOptions bad_options[] = {{0, kBase, 2 * kMiB},               // IOVA 0 in the window
                                         {kBase, kBase + kMiB, 2 * kMiB},  // window smaller than a block
                                         {kBase, ~0ull, 3 * kMiB}};        // block not a power of two
  for (const DmaPoolOptions& options : bad_options) EXPECT_THROW(DmaPool bad(*client, options), std::invalid_argument);
}

TEST(DmaPool, ThreadsAllocateAndFreeConcurrently) {
  ServedToy toy;
  auto client = connect(toy);
  DmaPool pool(*client);
  hal::DmaBuffer keep = pool.alloc_coherent(64, 64);  // keeps one block mapped throughout
  auto worker = [&](uint8_t tag) {
    std::mt19937 random(tag);
    std::vector<hal::DmaBuffer> live;
    for (int i = 0; i < 400; ++i) {
      if (live.size() < 20 && random() % 3) {
        hal::DmaBuffer b = pool.alloc_coherent(64 + random() % 20000, size_t(64) << (random() % 6));
        ASSERT_TRUE(b);
        ASSERT_TRUE(all_zero(b));
        std::memset(b.cpu, tag, b.size);
        live.push_back(b);
      } else if (!live.empty()) {
        hal::DmaBuffer b = live[random() % live.size()];
        for (size_t k = 0; k < b.size; ++k) ASSERT_EQ(static_cast<uint8_t*>(b.cpu)[k], tag) << "overwritten";
        pool.free_coherent(b);
        live.erase(std::find_if(live.begin(), live.end(), [&](auto& x) { return x.iova == b.iova; }));
      }
    }
    for (auto& b : live) pool.free_coherent(b);
  };
  std::thread t1(worker, 1), t2(worker, 2);
  t1.join();
  t2.join();
  EXPECT_EQ(pool.allocation_count(), 1u);
  pool.free_coherent(keep);
  EXPECT_EQ(pool.block_count(), 0u);
  EXPECT_EQ(toy.server.dma_map_count(), 0u);
  EXPECT_EQ(pool.errors().count(), 0u);
}

TEST(DmaPool, DestructionUnmapsWhatTheDriverLeft) {
  ServedToy toy;
  auto client = connect(toy);
  {
    DmaPool pool(*client);
    ASSERT_TRUE(pool.alloc_coherent(100, 64));
    ASSERT_TRUE(pool.alloc_coherent(5 * kMiB, 64));
    EXPECT_EQ(toy.server.dma_map_count(), 2u);
  }
  EXPECT_EQ(toy.server.dma_map_count(), 0u);
  EXPECT_EQ(toy.device.unmaps_seen, 2);
}

}  // namespace
