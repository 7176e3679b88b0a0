// Runs inside the QEMU guest (tests/qemu/run_in_guest.py) against QEMU's edu device bound
// to vfio-pci behind intel-iommu, through pcie::VfioTransport. One line per check;
// exits 0 only when every check passed.
//   vfio_guest_test EDU_BDF
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "driver/backends/vfio/vfio_transport.h"

namespace {

using pcie::PciTransportError;
using pcie::VfioTransport;
namespace vfio = pcie::vfio;

int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
  std::fflush(stdout);
  if (!ok) ++failures;
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// edu registers (QEMU docs/specs/edu.rst).
constexpr uint64_t kId = 0x00, kLive = 0x04, kRaise = 0x60, kAck = 0x64, kIrqStatus = 0x24;
constexpr uint64_t kDmaSrc = 0x80, kDmaDst = 0x88, kDmaCount = 0x90, kDmaCmd = 0x98;
constexpr uint64_t kEduBuffer = 0x40000;  // the device's internal 4 KiB buffer
constexpr uint32_t kDmaStart = 1, kDmaToRam = 2;

struct Bar {
  volatile uint8_t* base;
  uint32_t r32(uint64_t o) const { return *reinterpret_cast<volatile uint32_t*>(base + o); }
  void w32(uint64_t o, uint32_t v) const { *reinterpret_cast<volatile uint32_t*>(base + o) = v; }
  void w64(uint64_t o, uint64_t v) const { *reinterpret_cast<volatile uint64_t*>(base + o) = v; }
  uint64_t r64(uint64_t o) const { return *reinterpret_cast<volatile uint64_t*>(base + o); }
};

// Runs one edu DMA and waits for it (the device runs it 100 ms of virtual time later).
bool edu_dma(const Bar& bar, uint64_t src, uint64_t dst, uint64_t count, bool to_ram) {
  bar.w64(kDmaSrc, src);
  bar.w64(kDmaDst, dst);
  bar.w64(kDmaCount, count);
  bar.w64(kDmaCmd, kDmaStart | (to_ram ? kDmaToRam : 0));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (bar.r64(kDmaCmd) & kDmaStart) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

std::string kernel_log() {
  int size = ::klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, nullptr, 0);
  if (size <= 0) return "";
  std::string buf(static_cast<size_t>(size), '\0');
  int n = ::klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf.data(), size);
  buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return buf;
}

bool expect_error(const std::string& what, const std::string& needle, void (*fn)(const char*), const char* arg) {
  try {
    fn(arg);
  } catch (const PciTransportError& e) {
    bool ok = std::string(e.what()).find(needle) != std::string::npos;
    check(ok, what + ": \"" + e.what() + "\"");
    return ok;
  }
  check(false, what + ": no error");
  return false;
}

void run(const std::string& bdf) {
  VfioTransport t(bdf);
  check(true, "open " + t.bdf() + " in IOMMU group " + std::to_string(t.group_number()));

  pcie::DeviceInfo d = t.device_info();
  check(d.flags & vfio::kDeviceFlagPci, "device info: flags " + hex(d.flags) + ", " + std::to_string(d.num_regions) +
                                            " regions, " + std::to_string(d.num_irqs) + " irq indexes");
  std::string ranges;
  for (const pcie::IovaRange& r : t.iova_ranges()) ranges += " [" + hex(r.start) + ", " + hex(r.last) + "]";
  check(t.iova_ranges_reported() && t.iova_page_sizes() & 0x1000,
        "IOMMU info: page sizes " + hex(t.iova_page_sizes()) + ", DMA_AVAIL " + std::to_string(t.dma_avail()) +
            ", IOVA ranges" + ranges);
  for (uint32_t i = 0; i < d.num_regions && i < vfio::kNumPciRegions; ++i) {
    const pcie::RegionInfo& r = t.region(i);
    if (r.size == 0) continue;
    std::string areas;
    for (const pcie::MmapArea& a : r.mmap_areas) {
      areas += " mmap[" + hex(a.offset) + "+" + hex(a.size) + (a.ptr ? "]" : " unmapped]");
    }
    std::printf("INFO region %u: flags %s size %s%s\n", i, hex(r.flags).c_str(), hex(r.size).c_str(), areas.c_str());
  }
  for (uint32_t i = 0; i < d.num_irqs && i < vfio::kNumPciIrqs; ++i) {
    pcie::IrqInfo q = t.irq_info(i);
    std::printf("INFO irq %u: flags %s count %u\n", i, hex(q.flags).c_str(), q.count);
  }
  const pcie::RegionInfo& bar0 = t.region(vfio::kBar0RegionIndex);
  check(bar0.size == 0x100000 && bar0.mmap_areas.size() == 1 && bar0.mmap_areas[0].ptr,
        "BAR0 is 1 MiB and mmapped whole (flags " + hex(bar0.flags) + ")");
  const pcie::RegionInfo& cfg = t.region(vfio::kConfigRegionIndex);
  check(cfg.size >= 256 && cfg.mmap_areas.empty(), "config region " + hex(cfg.size) + " bytes, pread/pwrite only");
  pcie::IrqInfo msi = t.irq_info(vfio::kMsiIrqIndex);
  check(msi.count == 1 && (msi.flags & vfio::kIrqInfoEventfd), "MSI: 1 vector with eventfd (flags " +
                                                                  hex(msi.flags) + ")");

  uint16_t ids[2];
  t.region_read(vfio::kConfigRegionIndex, 0, ids, sizeof ids);
  check(ids[0] == 0x1234 && ids[1] == 0x11e8, "config vendor:device " + hex(ids[0]) + ":" + hex(ids[1]));
  uint16_t command = t.enable_memory_and_bus_master();
  check((command & 0x6) == 0x6, "COMMAND Memory|BusMaster set: " + hex(command));
  if (!bar0.mmap_areas.empty() && bar0.mmap_areas[0].ptr) {
    Bar bar{static_cast<volatile uint8_t*>(bar0.mmap_areas[0].ptr)};
    check(bar.r32(kId) == 0x010000ED, "edu id through the BAR0 mmap: " + hex(bar.r32(kId)));
    uint32_t id_pread = 0;
    t.region_read(vfio::kBar0RegionIndex, kId, &id_pread, sizeof id_pread);
    check(id_pread == 0x010000ED, "edu id through pread: " + hex(id_pread));
    bar.w32(kLive, 0x12345678);
    check(bar.r32(kLive) == ~0x12345678u, "liveness: wrote 0x12345678, read " + hex(bar.r32(kLive)));

    // DMA through the IOMMU: 64 KiB of ours at IOVA 1 MiB (below edu's 28-bit mask).
    constexpr size_t kBuf = 64 * 1024;
    void* mem = ::mmap(nullptr, kBuf, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    auto* buf = static_cast<uint8_t*>(mem);
    try {
      t.dma_map(buf, kBuf, reinterpret_cast<uintptr_t>(buf), -1, 0);
      check(false, "MAP_DMA with IOVA = VA " + hex(reinterpret_cast<uintptr_t>(buf)) + " accepted (39-bit IOMMU?)");
      t.dma_unmap(reinterpret_cast<uintptr_t>(buf), kBuf);
    } catch (const PciTransportError& e) {
      check(true, std::string("MAP_DMA with IOVA = VA refused: \"") + e.what() + "\"");
    }
    constexpr uint64_t kIova = 0x100000;
    t.dma_map(buf, kBuf, kIova, -1, 0);
    check(true, "MAP_DMA 64 KiB at IOVA " + hex(kIova));
    try {
      t.dma_map(buf, 4096, kIova, -1, 0);
      check(false, "overlapping MAP_DMA accepted");
    } catch (const PciTransportError& e) {
      check(std::string(e.what()).find("overlaps") != std::string::npos,
            std::string("overlapping MAP_DMA refused: \"") + e.what() + "\"");
    }
    for (int i = 0; i < 256; ++i) buf[i] = static_cast<uint8_t>(i * 7 + 1);
    std::memset(buf + 0x1000, 0, 256);
    bool ok = edu_dma(bar, kIova, kEduBuffer, 256, false) && edu_dma(bar, kEduBuffer, kIova + 0x1000, 256, true);
    check(ok && std::memcmp(buf, buf + 0x1000, 256) == 0, "DMA round trip RAM -> edu -> RAM through the IOMMU");

    // MSI: edu raises it on a write to 0x60; vfio delivers it to our eventfd.
    int efd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    t.set_irq_eventfds(vfio::kMsiIrqIndex, 0, {efd});
    auto start = std::chrono::steady_clock::now();
    bar.w32(kRaise, 0x1);
    pollfd p{efd, POLLIN, 0};
    int ready = ::poll(&p, 1, 2000);
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    uint64_t count = 0;
    if (ready == 1) (void)!::read(efd, &count, sizeof count);
    check(ready == 1 && count >= 1, "MSI delivered to the eventfd after " + std::to_string(static_cast<int>(us)) +
                                        " us (status " + hex(bar.r32(kIrqStatus)) + ")");
    bar.w32(kAck, 0x1);
    t.disable_irqs(vfio::kMsiIrqIndex);
    ::close(efd);

    // DMA to an unmapped IOVA: the IOMMU must stop it and the guest kernel log a DMAR fault.
    constexpr uint64_t kUnmapped = 0x800000;
    std::string before = kernel_log();
    size_t faults_before = 0;
    for (size_t at = before.find("DMAR: [DMA Write"); at != std::string::npos; at = before.find("DMAR: [DMA Write", at + 1)) {
      ++faults_before;
    }
    edu_dma(bar, kEduBuffer, kUnmapped, 256, true);
    bool fault = false;
    std::string line;
    for (int i = 0; i < 100 && !fault; ++i) {
      std::string log = kernel_log();
      size_t n = 0, last = std::string::npos;
      for (size_t at = log.find("DMAR: [DMA Write"); at != std::string::npos; at = log.find("DMAR: [DMA Write", at + 1)) {
        ++n;
        last = at;
      }
      if (n > faults_before) {
        fault = true;
        line = log.substr(last, log.find('\n', last) - last);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    check(fault, "DMA to unmapped IOVA " + hex(kUnmapped) + " caught by the IOMMU: " + (fault ? line : "no DMAR fault logged"));

    t.dma_unmap(kIova, kBuf);
    check(true, "UNMAP_DMA 64 KiB at IOVA " + hex(kIova));
    ::munmap(mem, kBuf);
  }

  if (d.flags & vfio::kDeviceFlagReset) {
    t.reset();
    check(true, "DEVICE_RESET");
  } else {
    try {
      t.reset();
      check(false, "reset of a device without RESET succeeded");
    } catch (const PciTransportError& e) {
      check(true, std::string("no reset offered, refused clearly: \"") + e.what() + "\"");
    }
  }

  // Clear errors: the group is ours already, the address is absent or not on vfio-pci.
  expect_error("second open of the same group", "the group is open already",
               [](const char* b) { VfioTransport again(b); }, t.bdf().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::printf("usage: vfio_guest_test EDU_BDF\n");
    return 2;
  }
  try {
    run(argv[1]);
  } catch (const PciTransportError& e) {
    check(false, std::string("transport error: ") + e.what());
  }
  expect_error("absent PCI function", "no such PCI function", [](const char* b) { VfioTransport t(b); },
               "0000:00:1e.7");
  expect_error("not a PCI address", "not a PCI address", [](const char* b) { VfioTransport t(b); }, "edu");
  // 00:1f.0 is q35's ISA bridge, on lpc_ich or no driver: never vfio-pci.
  expect_error("function not on vfio-pci", "not vfio-pci", [](const char* b) { VfioTransport t(b); },
               "0000:00:1f.0");
  std::printf("vfio_guest_test: %d check(s) failed\n", failures);
  return failures == 0 ? 0 : 1;
}
