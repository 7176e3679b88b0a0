// QEMU's edu (docs/specs/edu.rst) through VfioTransport: BAR0 by mmap and pread, MSI to an
// eventfd, DMA through the IOMMU both from our own mapping and from the backend's DmaPool,
// a DMA to an unmapped IOVA caught as a DMAR fault; and edu in a group it shares with a
// function on another driver (not viable).
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "driver/backends/pcie/dma_pool.h"
#include "driver/backends/vfio/vfio_transport.h"
#include "tests/qemu/guest_test.h"

namespace guest {
namespace {

namespace vfio = pcie::vfio;
using pcie::PciTransportError;
using pcie::VfioTransport;

constexpr uint64_t kId = 0x00, kLive = 0x04, kIrqStatus = 0x24, kRaise = 0x60, kAck = 0x64;
constexpr uint64_t kDmaSrc = 0x80, kDmaDst = 0x88, kDmaCount = 0x90, kDmaCmd = 0x98;
constexpr uint64_t kEduBuffer = 0x40000;  // the device's internal 4 KiB buffer
constexpr uint32_t kDmaStart = 1, kDmaToRam = 2;
constexpr uint64_t kEduDmaMask = (1ull << 28) - 1;  // edu masks DMA addresses to 28 bits

struct Bar {
  volatile uint8_t* base;
  uint32_t r32(uint64_t o) const { return *reinterpret_cast<volatile uint32_t*>(base + o); }
  void w32(uint64_t o, uint32_t v) const { *reinterpret_cast<volatile uint32_t*>(base + o) = v; }
  void w64(uint64_t o, uint64_t v) const { *reinterpret_cast<volatile uint64_t*>(base + o) = v; }
  uint64_t r64(uint64_t o) const { return *reinterpret_cast<volatile uint64_t*>(base + o); }
};

// One edu DMA, waited for (the device runs it 100 ms of virtual time later).
bool edu_dma(const Bar& bar, uint64_t src, uint64_t dst, uint64_t count, bool to_ram) {
  bar.w64(kDmaSrc, src);
  bar.w64(kDmaDst, dst);
  bar.w64(kDmaCount, count);
  bar.w64(kDmaCmd, kDmaStart | (to_ram ? kDmaToRam : 0));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (bar.r64(kDmaCmd) & kDmaStart) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void fill(uint8_t* p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i * 7 + seed);
}

void dma_from_our_mapping(VfioTransport& t, const Bar& bar) {
  constexpr size_t kBuf = 64 * 1024;
  void* mem = ::mmap(nullptr, kBuf, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  auto* buf = static_cast<uint8_t*>(mem);
  const uint64_t va = reinterpret_cast<uintptr_t>(buf);
  expect_error("MAP_DMA with IOVA = VA " + hex(va) + " refused (the vIOMMU has 39 bits)", "inside the IOMMU's ranges",
               [&] { t.dma_map(buf, kBuf, va, -1, 0); });
  constexpr uint64_t kIova = 0x100000;
  t.dma_map(buf, kBuf, kIova, -1, 0);
  check(true, "MAP_DMA 64 KiB at IOVA " + hex(kIova));
  expect_error("overlapping MAP_DMA refused", "overlaps", [&] { t.dma_map(buf, 4096, kIova, -1, 0); });
  fill(buf, 256, 1);
  std::memset(buf + 0x1000, 0, 256);
  const bool ok = edu_dma(bar, kIova, kEduBuffer, 256, false) && edu_dma(bar, kEduBuffer, kIova + 0x1000, 256, true);
  check(ok && std::memcmp(buf, buf + 0x1000, 256) == 0, "DMA round trip RAM -> edu -> RAM through the IOMMU");

  // A DMA to an unmapped IOVA: the IOMMU stops it and the guest kernel logs a DMAR fault.
  constexpr uint64_t kUnmapped = 0x800000;
  const size_t before = kernel_log_count("DMAR: [DMA Write");
  edu_dma(bar, kEduBuffer, kUnmapped, 256, true);
  bool fault = false;
  for (int i = 0; i < 100 && !fault; ++i) {
    fault = kernel_log_count("DMAR: [DMA Write") > before;
    if (!fault) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string line = "no DMAR fault logged";
  if (fault) {
    const std::string log = kernel_log();
    const size_t at = log.rfind("DMAR: [DMA Write");
    line = log.substr(at, log.find('\n', at) - at);
  }
  check(fault, "DMA to unmapped IOVA " + hex(kUnmapped) + " caught by the IOMMU: " + line);
  t.dma_unmap(kIova, kBuf);
  check(true, "UNMAP_DMA 64 KiB at IOVA " + hex(kIova));
  ::munmap(mem, kBuf);
}

// The backend's own allocator: memfd blocks mapped at IOVAs it picks inside the ranges the
// IOMMU reported and below the device's mask.
void dma_from_the_pool(VfioTransport& t, const Bar& bar) {
  pcie::DmaPoolOptions options;
  options.iova_base = 1ull << 20;
  options.dma_mask = kEduDmaMask;
  {
    pcie::DmaPool pool(t, options);
    hal::DmaBuffer src = pool.alloc_coherent(256, 64), dst = pool.alloc_coherent(256, 4096);
    check(src && dst && dst.iova + dst.size - 1 <= kEduDmaMask,
          "DmaPool buffers at IOVAs " + hex(src.iova) + " and " + hex(dst.iova) + ", below edu's 28-bit mask");
    if (src && dst) {
      fill(static_cast<uint8_t*>(src.cpu), 256, 3);
      const bool ok = edu_dma(bar, src.iova, kEduBuffer, 256, false) && edu_dma(bar, kEduBuffer, dst.iova, 256, true);
      check(ok && std::memcmp(src.cpu, dst.cpu, 256) == 0, "DMA round trip between two DmaPool buffers");
      pool.free_coherent(src);
      pool.free_coherent(dst);
    }
    check(pool.block_count() == 0 && pool.errors().count() == 0, "DmaPool unmapped its block once both were freed");
  }
  options.iova_base = 1ull << 40;
  options.dma_mask = (1ull << 44) - 1;
  expect_error("a DmaPool above the IOMMU's 39 bits refused", "the IOMMU accepts no",
               [&] { pcie::DmaPool beyond(t, options); });
}

}  // namespace

void edu_checks(const std::string& bdf) {
  VfioTransport t(bdf, iommu_kind());
  check(true, "open " + t.bdf() + " in IOMMU group " + std::to_string(t.group_number()) + " through " + t.iommu_name());
  const pcie::DeviceInfo d = t.device_info();
  check(d.flags & vfio::kDeviceFlagPci, "a PCI device with " + std::to_string(d.num_regions) + " regions");
  std::string ranges;
  for (const pcie::IovaRange& r : t.iova_ranges()) ranges += " [" + hex(r.start) + ", " + hex(r.last) + "]";
  check(t.iova_ranges_reported() && (t.iova_page_sizes() & 0x1000),
        "IOMMU info: page sizes " + hex(t.iova_page_sizes()) + ", DMA_AVAIL " + std::to_string(t.dma_avail()) +
            ", IOVA ranges" + ranges);
  print_infos(t);
  const pcie::RegionInfo& bar0 = t.region(vfio::kBar0RegionIndex);
  check(bar0.size == 0x100000 && bar0.mmap_areas.size() == 1 && bar0.mmap_areas[0].ptr,
        "BAR0 is 1 MiB and mmapped whole (flags " + hex(bar0.flags) + ")");
  const pcie::RegionInfo& cfg = t.region(vfio::kConfigRegionIndex);
  check(cfg.size >= 256 && cfg.mmap_areas.empty(), "config region " + hex(cfg.size) + " bytes, pread/pwrite only");
  const pcie::IrqInfo msi = t.irq_info(vfio::kMsiIrqIndex);
  check(msi.count == 1 && (msi.flags & vfio::kIrqInfoEventfd), "MSI: 1 vector with eventfd (flags " + hex(msi.flags) + ")");

  uint16_t ids[2];
  t.region_read(vfio::kConfigRegionIndex, 0, ids, sizeof ids);
  check(ids[0] == 0x1234 && ids[1] == 0x11e8, "config vendor:device " + hex(ids[0]) + ":" + hex(ids[1]));
  const uint16_t command = t.enable_memory_and_bus_master();
  check((command & 0x6) == 0x6, "COMMAND Memory|BusMaster set: " + hex(command));
  if (!bar0.mmap_areas.empty() && bar0.mmap_areas[0].ptr) {
    const Bar bar{static_cast<volatile uint8_t*>(bar0.mmap_areas[0].ptr)};
    check(bar.r32(kId) == 0x010000ED, "edu id through the BAR0 mmap: " + hex(bar.r32(kId)));
    uint32_t id_pread = 0;
    t.region_read(vfio::kBar0RegionIndex, kId, &id_pread, sizeof id_pread);
    check(id_pread == 0x010000ED, "edu id through pread: " + hex(id_pread));
    bar.w32(kLive, 0x12345678);
    check(bar.r32(kLive) == ~0x12345678u, "liveness: wrote 0x12345678 through the mmap, read " + hex(bar.r32(kLive)));

    dma_from_our_mapping(t, bar);
    dma_from_the_pool(t, bar);

    // MSI: edu raises it on a write to 0x60; VFIO signals our eventfd.
    const int efd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    t.set_irq_eventfds(vfio::kMsiIrqIndex, 0, {efd});
    const auto start = std::chrono::steady_clock::now();
    bar.w32(kRaise, 0x1);
    pollfd p{efd, POLLIN, 0};
    const int ready = ::poll(&p, 1, 2000);
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    uint64_t count = 0;
    if (ready == 1) (void)!::read(efd, &count, sizeof count);
    check(ready == 1 && count >= 1, "MSI delivered to the eventfd after " + std::to_string(static_cast<int>(us)) +
                                        " us (status " + hex(bar.r32(kIrqStatus)) + ")");
    bar.w32(kAck, 0x1);
    t.disable_irqs(vfio::kMsiIrqIndex);
    ::close(efd);
  }
  reset_checks(t, "flr", [&] { return bar0.mmap_areas[0].ptr && Bar{static_cast<volatile uint8_t*>(bar0.mmap_areas[0].ptr)}.r32(kLive) == 0; },
               "put the liveness register back to 0");
  expect_error("a second open of the same group", "is open already", [&] { VfioTransport again(bdf, iommu_kind()); });
}

void edu_in_shared_group_checks(const std::string& bdf) {
  expect_error("a group shared with a function on another driver is not viable", "is not viable",
               [&] { VfioTransport t(bdf, iommu_kind()); });
}

}  // namespace guest
