// What a device access costs over vfio-user on this machine: a REGION_WRITE/READ round
// trip through the socket, posted writes, and a doorbell to the MSI-X eventfd, trapped
// (REGION_WRITE) or stored into the shared page the device polls.
#include <benchmark/benchmark.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "driver/backends/vfio_user/client.h"
#include "tests/cpp/driver/backends/vfio_user_toy_device.h"

namespace {

using namespace vfio_user_test;
using pcie::vfio_user::VfioUserClient;
using pcie::vfio_user::VfioUserClientOptions;

void wait_eventfd(int fd) {
  pollfd p{fd, POLLIN, 0};
  ::poll(&p, 1, -1);
  uint64_t count;
  if (::read(fd, &count, sizeof(count)) != sizeof(count)) std::abort();
}

void BM_RegionWrite4(benchmark::State& state) {
  ServedToy toy;
  VfioUserClient client(toy.path());
  uint32_t value = 0;
  for (auto _ : state) client.region_write(0, reg::kScratch, &++value, 4);
}
BENCHMARK(BM_RegionWrite4)->UseRealTime();

void BM_RegionRead4(benchmark::State& state) {
  ServedToy toy;
  VfioUserClient client(toy.path());
  uint32_t value = 0;
  for (auto _ : state) client.region_read(0, reg::kScratch, &value, 4);
  benchmark::DoNotOptimize(value);
}
BENCHMARK(BM_RegionRead4)->UseRealTime();

void BM_PostedRegionWrite4(benchmark::State& state) {
  ServedToy toy;
  VfioUserClientOptions options;
  options.posted_writes = true;
  VfioUserClient client(toy.path(), options);
  uint32_t value = 1;
  for (auto _ : state) client.region_write(0, reg::kCounter, &value, 4);
  client.region_read(0, reg::kCounter, &value, 4);  // every posted write has landed
}
BENCHMARK(BM_PostedRegionWrite4)->UseRealTime();

void BM_TrappedDoorbellToEventfd(benchmark::State& state) {
  ServedToy toy;
  VfioUserClient client(toy.path());
  int efd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  client.set_irq_eventfds(vfio::kMsixIrqIndex, 0, {efd});
  uint32_t vector = 0;
  for (auto _ : state) {
    client.region_write(0, reg::kFireVector, &vector, 4);
    wait_eventfd(efd);
  }
  ::close(efd);
}
BENCHMARK(BM_TrappedDoorbellToEventfd)->UseRealTime();

// The device thread busy-polls the shared page between messages, as a device model would.
void BM_SharedPageDoorbellToEventfd(benchmark::State& state) {
  ServedToy toy({}, /*poll_ms=*/0);
  VfioUserClient client(toy.path());
  int efd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  client.set_irq_eventfds(vfio::kMsixIrqIndex, 0, {efd});
  auto* bell = static_cast<uint32_t*>(client.region(2).mmap_areas[0].ptr);
  uint32_t value = 0;
  for (auto _ : state) {
    __atomic_store_n(bell, ++value, __ATOMIC_RELEASE);
    wait_eventfd(efd);
  }
  ::close(efd);
}
BENCHMARK(BM_SharedPageDoorbellToEventfd)->UseRealTime();

}  // namespace
