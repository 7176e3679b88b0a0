// QEMU's e1000e (82574: BAR0 registers, MSI-X table in BAR3, as on E810) through the
// driver's PCIe backend on VfioTransport: the irdma driver's probe refusing a function it
// does not drive, BAR0 through the mmap and through pread, MSI-X vectors reaching their
// handlers on the backend's epoll thread, DEVICE_RESET; and nvme (its MSI-X table inside
// BAR0) with an FLR putting a register back to its default.
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "driver/backends/pcie/pcie_host.h"
#include "driver/backends/vfio/vfio_transport.h"
#include "driver/irdma/irdma_device.h"
#include "tests/qemu/guest_test.h"

namespace guest {
namespace {

namespace vfio = pcie::vfio;

// 82574 registers (its datasheet, section 10).
constexpr uint64_t kIcr = 0xC0, kIcs = 0xC8, kIms = 0xD0, kImc = 0xD8, kIvar = 0xE4, kRdbal = 0x2800;
constexpr uint32_t kIcrRxq0 = 1u << 20;
constexpr uint32_t kIvarValid = 1u << 3;  // of each 4-bit IVAR field; RXQ0's is bits 3:0
constexpr unsigned kVectors = 5;          // 82574's MSI-X table

bool wait_for(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

void e1000e_checks(const std::string& bdf) {
  pcie::PcieHost host(std::make_unique<pcie::VfioTransport>(bdf, iommu_kind()));
  auto& t = static_cast<pcie::VfioTransport&>(host.transport());
  check(true, "PcieHost on " + t.bdf() + " in IOMMU group " + std::to_string(t.group_number()));
  print_infos(t);

  {
    irdma::irdma_device driver(host.platform());
    const int ret = driver.probe();
    check(ret == -ENODEV && driver.probe_error().find("8086:10d3 is not a device irdma drives") != std::string::npos,
          "irdma's probe on an e1000e: " + std::to_string(ret) + ", \"" + driver.probe_error() + "\"");
    driver.remove();
  }

  const MsixCap msix = read_msix_cap(t);
  check(msix.present && msix.vectors == kVectors && msix.table_bar == 3,
        "MSI-X capability: " + std::to_string(msix.vectors) + " vectors, table in BAR" +
            std::to_string(msix.table_bar) + " at " + hex(msix.table_offset) + ", PBA in BAR" +
            std::to_string(msix.pba_bar) + " at " + hex(msix.pba_offset));
  const pcie::IrqInfo irq = t.irq_info(vfio::kMsixIrqIndex);
  check(irq.count == kVectors && (irq.flags & vfio::kIrqInfoEventfd),
        "VFIO's MSI-X index: " + std::to_string(irq.count) + " vectors with eventfds (flags " + hex(irq.flags) + ")");

  const uint16_t command = t.enable_memory_and_bus_master();
  check((command & 0x6) == 0x6, "COMMAND Memory|BusMaster set: " + hex(command));
  pcie::PcieBar& bar = host.bar0();
  check(bar.size() == 128 * 1024, "BAR0 is " + std::to_string(bar.size() / 1024) + " KiB");
  bar.write32(kRdbal, 0x12345670);
  uint32_t rdbal = 0;
  t.region_read(vfio::kBar0RegionIndex, kRdbal, &rdbal, sizeof rdbal);
  check(rdbal == 0x12345670 && bar.read32(kRdbal) == 0x12345670,
        "RDBAL written through the BAR0 mmap reads back through pread and the mmap: " + hex(rdbal));
  check(bar.errors().count() == 0, "no BAR access failed");

  // MSI-X: every vector gets an eventfd; IVAR routes RXQ0 to one vector, ICS raises it.
  hal::Interrupts& irqs = host.irq();
  const int vectors = irqs.alloc_irq_vectors(1, 32);
  check(vectors == int(kVectors), "alloc_irq_vectors(1, 32): " + std::to_string(vectors));
  std::atomic<unsigned> calls[kVectors] = {};
  for (unsigned v = 0; v < kVectors && vectors > 0; ++v)
    irqs.request_irq(v, [&calls](unsigned vector) { calls[vector].fetch_add(1); });
  for (const unsigned target : {2u, 4u}) {
    bar.write32(kImc, ~0u);
    bar.write32(kIcr, ~0u);  // write-one-to-clear: nothing pending
    for (auto& c : calls) c = 0;
    bar.write32(kIvar, target | kIvarValid);
    bar.write32(kIms, kIcrRxq0);
    bar.write32(kIcs, kIcrRxq0);
    const bool delivered = wait_for([&] { return calls[target].load() > 0; });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // time for a wrong vector to fire too
    unsigned others = 0;
    for (unsigned v = 0; v < kVectors; ++v)
      if (v != target) others += calls[v].load();
    check(delivered && others == 0, "MSI-X vector " + std::to_string(target) + " reached its handler (" +
                                        std::to_string(calls[target].load()) + " call(s), " + std::to_string(others) +
                                        " on other vectors)");
  }
  bar.write32(kImc, ~0u);
  for (unsigned v = 0; v < kVectors && vectors > 0; ++v) irqs.free_irq(v);
  check(host.irq().spurious() == 0, "no spurious interrupt");

  // A bus reset would show (QEMU 7.2's root ports then never report the link active again,
  // and the kernel gives up on them), a PM reset cannot.
  reset_checks(t, "pm", nullptr, "done (QEMU keeps RDBAL through it: " + hex(bar.read32(kRdbal)) + ")");
}

void nvme_checks(const std::string& bdf) {
  pcie::PcieHost host(std::make_unique<pcie::VfioTransport>(bdf, iommu_kind()));
  auto& t = static_cast<pcie::VfioTransport&>(host.transport());
  print_infos(t);
  const MsixCap msix = read_msix_cap(t);
  const pcie::RegionInfo& bar0 = t.region(msix.table_bar);
  // VFIO keeps the MSI-X table from the mmap unless the IOMMU remaps interrupts.
  bool table_mapped = false;
  for (const pcie::MmapArea& a : bar0.mmap_areas)
    table_mapped = table_mapped || (a.ptr && a.offset < msix.table_offset + 16ull * msix.vectors &&
                                    msix.table_offset < a.offset + a.size);
  info(std::string("the MSI-X table at BAR") + std::to_string(msix.table_bar) + "+" + hex(msix.table_offset) +
       (table_mapped ? " is inside an mmapped area" : " is left to pread/pwrite"));
  check(msix.present && msix.vectors == t.irq_info(vfio::kMsixIrqIndex).count,
        "MSI-X: " + std::to_string(msix.vectors) + " vectors in config space, as VFIO reports");

  t.enable_memory_and_bus_master();
  pcie::PcieBar& bar = host.bar0();
  uint64_t cap = 0;
  t.region_read(vfio::kBar0RegionIndex, 0, &cap, sizeof cap);
  check(cap != 0 && bar.read64(0) == cap, "CAP through the mmap and through pread: " + hex(cap));
  // Controller configuration: queue entry sizes set, the controller left disabled.
  constexpr uint64_t kCc = 0x14;
  constexpr uint32_t kCcEntrySizes = 0x00460000;
  bar.write32(kCc, kCcEntrySizes);
  check(bar.read32(kCc) == kCcEntrySizes, "CC written and read back: " + hex(bar.read32(kCc)));
  reset_checks(t, "flr", [&] { return bar.read32(kCc) == 0; }, "put CC back to 0");
}

}  // namespace guest
