// What the PCIe backend adds on top of the vfio-user transport: a DMA allocation from a
// mapped block and one that maps a block of its own, a BAR read by the slow path and a
// store into the mapped page, and a device's eventfd signal to the handler on the epoll
// thread.
#include <benchmark/benchmark.h>

#include <atomic>

#include "driver/backends/pcie/dma_pool.h"
#include "driver/backends/pcie/irq_dispatcher.h"
#include "driver/backends/pcie/pcie_bar.h"
#include "driver/backends/pcie/pcie_config.h"
#include "driver/backends/vfio_user/client.h"
#include "tests/cpp/driver/backends/vfio_user_toy_device.h"

namespace {

using namespace vfio_user_test;
using pcie::vfio_user::VfioUserClient;

void BM_DmaAllocFreeInAMappedBlock(benchmark::State& state) {
  ServedToy toy;
  VfioUserClient client(toy.path());
  pcie::DmaPool pool(client);
  hal::DmaBuffer keep = pool.alloc_coherent(64, 64);  // the block stays mapped
  for (auto _ : state) pool.free_coherent(pool.alloc_coherent(state.range(0), 256));
  pool.free_coherent(keep);
}
BENCHMARK(BM_DmaAllocFreeInAMappedBlock)->Arg(256)->Arg(64 << 10)->UseRealTime();

// The worst case: every allocation maps a fresh 2 MiB block (DMA_MAP with its memfd) and
// every free unmaps it again.
void BM_DmaAllocFreeOfItsOwnBlock(benchmark::State& state) {
  ServedToy toy;
  VfioUserClient client(toy.path());
  pcie::DmaPool pool(client);
  for (auto _ : state) pool.free_coherent(pool.alloc_coherent(4096, 4096));
}
BENCHMARK(BM_DmaAllocFreeOfItsOwnBlock)->UseRealTime();

void BM_BarSlowPathRead32(benchmark::State& state) {
  ServedToy toy;
  VfioUserClient client(toy.path());
  pcie::PcieBar bar0(client, 0);
  for (auto _ : state) benchmark::DoNotOptimize(bar0.read32(reg::kScratch));
}
BENCHMARK(BM_BarSlowPathRead32)->UseRealTime();

void BM_BarMappedWrite32(benchmark::State& state) {
  ServedToy toy;
  VfioUserClient client(toy.path());
  pcie::PcieBar bar2(client, 2);
  uint32_t value = 0;
  for (auto _ : state) bar2.write32(kPage + 8, ++value);  // a word the device does not poll
}
BENCHMARK(BM_BarMappedWrite32)->UseRealTime();

// From the device's eventfd write to the handler, through the epoll thread.
void BM_EventfdToHandler(benchmark::State& state) {
  ServedToy toy;
  VfioUserClient client(toy.path());
  pcie::PcieConfig config(client);
  pcie::IrqDispatcher irq(client, config);
  irq.alloc_irq_vectors(1, 4);
  std::atomic<uint64_t> handled{0};
  irq.request_irq(2, [&](unsigned) { handled.fetch_add(1, std::memory_order_release); });
  for (auto _ : state) {
    const uint64_t before = handled.load(std::memory_order_acquire);
    toy.server.trigger_irq(vfio::kMsixIrqIndex, 2);
    while (handled.load(std::memory_order_acquire) == before) {
    }
  }
  irq.free_irq(2);
}
BENCHMARK(BM_EventfdToHandler)->UseRealTime();

}  // namespace
