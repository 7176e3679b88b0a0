// HostMemory: zeroed, aligned regions at fresh IOVAs with a guard page after each; memory
// resident only where touched and given back after free (in batches, live regions between
// freed ones untouched); IOVAs reused only once the space is used up; lookups right among
// thousands of regions; bad requests refused.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>

#include "model/platform/host_memory.h"

namespace {

using irdma_sim::platform::HostMemory;

constexpr uint64_t kMiB = 1ull << 20;

// An initiator for HostMemory's socket: freeing a region invalidates DMI through it.
struct Initiator : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Initiator> socket{"socket"};
  explicit Initiator(sc_core::sc_module_name name) : sc_module(name) {
    socket.register_invalidate_direct_mem_ptr(this, &Initiator::invalidate);
  }
  void invalidate(sc_dt::uint64 start, sc_dt::uint64 end) { invalidated.emplace_back(start, end); }
  std::vector<std::pair<uint64_t, uint64_t>> invalidated;
};

struct Memory {
  explicit Memory(uint64_t capacity, uint64_t iova_space = 0) : mem("host_memory", capacity, iova_space) {
    cpu.socket.bind(mem.socket);
  }
  HostMemory mem;
  Initiator cpu{"cpu"};
};

size_t resident_pages(const void* p, size_t len) {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec((len + page - 1) / page);
  if (::mincore(const_cast<void*>(p), len, vec.data()) != 0) return ~size_t(0);
  size_t n = 0;
  for (unsigned char v : vec) n += v & 1;
  return n;
}

TEST(HostMemory, RegionsAreZeroedAlignedFreshAndGuarded) {
  Memory m(64 * kMiB);
  std::vector<HostMemory::Region> regions;
  for (auto [size, align] : std::vector<std::pair<size_t, size_t>>{{1, 1}, {4096, 4096}, {100, 64}, {kMiB, 2 * kMiB}}) {
    const HostMemory::Region r = m.mem.alloc(size, align);
    ASSERT_TRUE(r.cpu) << size;
    EXPECT_EQ(r.iova % std::max<size_t>(align, 4096), 0u);
    for (size_t i = 0; i < size; ++i) ASSERT_EQ(r.cpu[i], 0) << i;
    EXPECT_EQ(m.mem.cpu_ptr(r.iova, size), r.cpu);
    EXPECT_EQ(m.mem.cpu_ptr(r.iova + size - 1, 1), r.cpu + size - 1);
    EXPECT_EQ(m.mem.cpu_ptr(r.iova + size, 1), nullptr) << "one byte past the end is no region's";
    EXPECT_EQ(m.mem.cpu_ptr(r.iova, size + 1), nullptr);
    std::memset(r.cpu, 0xA5, size);
    regions.push_back(r);
  }
  for (size_t i = 1; i < regions.size(); ++i) EXPECT_GT(regions[i].iova, regions[i - 1].iova);
  EXPECT_EQ(m.mem.mapped_bytes(), 1 + 4096 + 100 + kMiB);
  EXPECT_EQ(m.mem.cpu_ptr(0, 1), nullptr);
  EXPECT_EQ(m.mem.cpu_ptr(~0ull - 8, 4), nullptr);
}

TEST(HostMemory, OnlyTouchedPagesAreResidentAndFreedOnesGoBack) {
  Memory m(1024 * kMiB);
  const HostMemory::Region r = m.mem.alloc(256 * kMiB, 4096);
  ASSERT_TRUE(r.cpu);
  EXPECT_EQ(resident_pages(r.cpu, r.size), 0u) << "nothing touched yet";
  std::memset(r.cpu + 64 * kMiB, 1, 16 * kMiB);
  EXPECT_EQ(resident_pages(r.cpu, r.size), 16 * kMiB / 4096);
  const uint64_t iova = r.iova;
  ASSERT_TRUE(m.mem.free(iova));
  EXPECT_EQ(resident_pages(r.cpu, r.size), 0u) << "freed pages go back to the OS";
  EXPECT_EQ(m.mem.cpu_ptr(iova, 1), nullptr);
  EXPECT_FALSE(m.mem.free(iova)) << "a second free finds nothing";
  ASSERT_EQ(m.cpu.invalidated.size(), 1u);
  EXPECT_EQ(m.cpu.invalidated[0], std::make_pair(iova, iova + 256 * kMiB - 1));
  EXPECT_EQ(m.mem.mapped_bytes(), 0u);
}

TEST(HostMemory, FreedPagesGoBackInBatchesAroundLiveRegions) {
  Memory m(1024 * kMiB);
  std::vector<HostMemory::Region> regions;
  constexpr size_t kSize = 2 * kMiB;
  for (int i = 0; i < 100; ++i) {
    regions.push_back(m.mem.alloc(kSize, 4096));
    ASSERT_TRUE(regions.back().cpu);
    std::memset(regions.back().cpu, 0x5A, kSize);
  }
  // Every other region freed (100 MiB, more than a batch): the live ones between keep every byte.
  size_t freed_resident = 0;
  for (size_t i = 0; i < regions.size(); i += 2) ASSERT_TRUE(m.mem.free(regions[i].iova));
  for (size_t i = 0; i < regions.size(); i += 2) freed_resident += resident_pages(regions[i].cpu, kSize);
  EXPECT_LT(freed_resident, 64 * kMiB / 4096) << "at most a batch of freed memory stays resident";
  EXPECT_GT(freed_resident, 0u) << "not given back one region at a time";
  for (size_t i = 1; i < regions.size(); i += 2) {
    ASSERT_EQ(resident_pages(regions[i].cpu, kSize), kSize / 4096) << "live region " << i;
    for (size_t b = 0; b < kSize; b += 997) ASSERT_EQ(regions[i].cpu[b], 0x5A) << "live region " << i << " at " << b;
  }
  // The rest freed, and a batch more: all of it is given back.
  for (size_t i = 1; i < regions.size(); i += 2) ASSERT_TRUE(m.mem.free(regions[i].iova));
  const HostMemory::Region big = m.mem.alloc(64 * kMiB, 4096);
  ASSERT_TRUE(big.cpu);
  ASSERT_TRUE(m.mem.free(big.iova));
  for (size_t i = 0; i < regions.size(); ++i) EXPECT_EQ(resident_pages(regions[i].cpu, kSize), 0u) << i;
}

TEST(HostMemory, FreedIovasComeBackOnlyOnceTheSpaceIsUsedUp) {
  Memory m(64 * kMiB, 4 * kMiB);  // room for 15 regions of 256 KiB with their guard pages
  const HostMemory::Region first = m.mem.alloc(256 << 10, 4096);
  ASSERT_TRUE(first.cpu);
  std::memset(first.cpu, 0x5A, first.size);
  ASSERT_TRUE(m.mem.free(first.iova));
  std::vector<uint64_t> iovas;
  for (;;) {
    const HostMemory::Region r = m.mem.alloc(256 << 10, 4096);
    if (!r.cpu) break;
    iovas.push_back(r.iova);
    if (r.iova == first.iova) {
      for (size_t i = 0; i < r.size; ++i) ASSERT_EQ(r.cpu[i], 0) << "a reused region comes back zeroed";
      break;
    }
  }
  ASSERT_FALSE(iovas.empty());
  EXPECT_EQ(iovas.back(), first.iova) << "the freed gap is found once fresh IOVAs run out";
  EXPECT_GT(iovas.size(), 10u) << "not before";
  EXPECT_FALSE(m.mem.alloc(256 << 10, 4096).cpu) << "the space is full";
}

TEST(HostMemory, ThousandsOfRegionsAreEachFoundAtEveryOffset) {
  Memory m(1024 * kMiB);
  std::vector<HostMemory::Region> regions;
  for (int i = 0; i < 5000; ++i) regions.push_back(m.mem.alloc(64 + (i % 7) * 1000, 64));
  for (size_t i = 0; i < regions.size(); i += 3) ASSERT_TRUE(m.mem.free(regions[i].iova));
  for (size_t i = 0; i < regions.size(); ++i) {
    const HostMemory::Region& r = regions[i];
    for (size_t off : {size_t(0), r.size / 2, r.size - 1})
      ASSERT_EQ(m.mem.cpu_ptr(r.iova + off, 1), i % 3 ? r.cpu + off : nullptr) << i << " at " << off;
  }
}

TEST(HostMemory, BadRequestsAndTheCapacityAreRefused) {
  Memory m(4 * kMiB);
  EXPECT_FALSE(m.mem.alloc(0, 64).cpu);
  EXPECT_FALSE(m.mem.alloc(64, 0).cpu);
  EXPECT_FALSE(m.mem.alloc(64, 48).cpu);
  EXPECT_FALSE(m.mem.alloc(4 * kMiB + 1, 64).cpu);
  const HostMemory::Region all = m.mem.alloc(4 * kMiB, 64);
  ASSERT_TRUE(all.cpu);
  EXPECT_FALSE(m.mem.alloc(1, 1).cpu) << "the capacity is mapped";
  ASSERT_TRUE(m.mem.free(all.iova));
  EXPECT_TRUE(m.mem.alloc(1, 1).cpu);
}

}  // namespace
