// IrqDispatcher over the vfio-user client and the toy device: vectors allocated as the PCI
// core does and capped, handlers on the epoll thread for their own vector, the request_irq
// contract, spurious signals, free_irq racing a running handler, destruction, and the
// function's error IRQ.
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "driver/backends/pcie/irq_dispatcher.h"
#include "driver/backends/pcie/pcie_config.h"
#include "tests/cpp/driver/backends/pcie_test_util.h"

namespace {

using namespace pcie_test;
using pcie::IrqDispatcher;
using pcie::PcieConfig;

// The toy, a client, its config space and a dispatcher on them.
struct Rig {
  explicit Rig(ToyLayout layout = {}) : toy({}, 1, "irq", layout), client(connect(toy)), config(*client) {
    irq = std::make_unique<IrqDispatcher>(*client, config);
  }
  bool fire(unsigned vector) { return toy.server.trigger_irq(vfio::kMsixIrqIndex, vector); }
  uint16_t msix_flags() { return config.read16(kMsixCap + hal::PCI_MSIX_FLAGS); }

  ServedToy toy;
  std::unique_ptr<VfioUserClient> client;
  PcieConfig config;
  std::unique_ptr<IrqDispatcher> irq;
};

std::string thread_name() {
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  return name;
}

TEST(IrqDispatcher, AllocatesVectorsAsThePciCoreDoes) {
  Rig rig;
  EXPECT_EQ(rig.irq->num_vectors(), 0u);
  EXPECT_FALSE(rig.msix_flags() & hal::PCI_MSIX_FLAGS_ENABLE);
  EXPECT_EQ(rig.irq->alloc_irq_vectors(2, 4), 4);
  EXPECT_EQ(rig.irq->num_vectors(), 4u);
  EXPECT_TRUE(rig.msix_flags() & hal::PCI_MSIX_FLAGS_ENABLE);
  EXPECT_FALSE(rig.msix_flags() & hal::PCI_MSIX_FLAGS_MASKALL);
  for (unsigned v = 0; v < 4; ++v) EXPECT_TRUE(rig.fire(v)) << "vector " << v << " has its eventfd";
  EXPECT_FALSE(rig.fire(4)) << "only what was allocated";
  EXPECT_EQ(rig.irq->alloc_irq_vectors(1, 4), -EINVAL) << "already allocated";
}

// pci_free_irq_vectors: MSI-X off and the eventfds gone, so a driver probed again (after a
// reset) allocates afresh; twice is harmless.
TEST(IrqDispatcher, FreedVectorsAreAllocatedAgain) {
  Rig rig;
  ASSERT_EQ(rig.irq->alloc_irq_vectors(2, 4), 4);
  rig.irq->free_irq_vectors();
  EXPECT_EQ(rig.irq->num_vectors(), 0u);
  EXPECT_FALSE(rig.msix_flags() & hal::PCI_MSIX_FLAGS_ENABLE);
  rig.irq->free_irq_vectors();
  EXPECT_EQ(rig.irq->alloc_irq_vectors(1, 2), 2);
  std::atomic<int> runs{0};
  EXPECT_EQ(rig.irq->request_irq(1, [&](unsigned) { runs++; }), 0);
  EXPECT_TRUE(rig.fire(1));
  for (int i = 0; i < 200 && runs.load() == 0; i++) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(runs.load(), 1) << "the new eventfd reaches the handler";
  rig.irq->free_irq(1);
}

TEST(IrqDispatcher, EveryVectorsEventfdGoesToTheTransportInOneCall) {
  ServedToy toy({}, 1, "irq");
  auto client = connect(toy);
  CountingTransport transport(*client);
  PcieConfig config(transport);
  IrqDispatcher irq(transport, config);
  ASSERT_EQ(irq.alloc_irq_vectors(1, kMsixVectors), int(kMsixVectors));
  EXPECT_EQ(transport.set_irq_calls, 1) << "kernel VFIO before dynamic MSI-X cannot add vectors later";
  std::atomic<int> calls{0};
  ASSERT_EQ(irq.request_irq(kMsixVectors - 1, [&](unsigned) { ++calls; }), 0);
  EXPECT_EQ(transport.set_irq_calls, 1) << "request_irq leaves the transport alone";
  toy.server.trigger_irq(vfio::kMsixIrqIndex, kMsixVectors - 1);
  EXPECT_TRUE(eventually([&] { return calls == 1; }));
}

// A dispatcher over a transport that refuses the operation `refused` until told otherwise.
struct RefusingRig {
  explicit RefusingRig(const char* refused) : toy({}, 1, "irq"), client(connect(toy)), transport(*client) {
    transport.refuse = refused;
  }
  ServedToy toy;
  std::unique_ptr<VfioUserClient> client;
  CountingTransport transport;
  PcieConfig config{transport};
  IrqDispatcher irq{transport, config};
};

TEST(IrqDispatcher, ATransportThatRefusesGivesEioAndLeavesMsixOff) {
  for (const char* refused : {"irq_info", "set_irq_eventfds"}) {
    RefusingRig rig(refused);
    EXPECT_EQ(rig.irq.alloc_irq_vectors(1, 4), -EIO) << refused;
    EXPECT_EQ(rig.irq.num_vectors(), 0u);
    EXPECT_FALSE(rig.config.read16(kMsixCap + hal::PCI_MSIX_FLAGS) & hal::PCI_MSIX_FLAGS_ENABLE) << refused;
    rig.transport.refuse.clear();
    EXPECT_EQ(rig.irq.alloc_irq_vectors(1, 4), 4) << "nothing half-done stands in the way";
  }
}

TEST(IrqDispatcher, VectorCountIsCappedByTheTableTheTransportAndTheCaller) {
  EXPECT_EQ(Rig().irq->alloc_irq_vectors(1, 100), int(kMsixVectors));
  EXPECT_EQ(Rig().irq->alloc_irq_vectors(kMsixVectors + 1, 100), -ENOSPC);
  EXPECT_EQ(Rig().irq->alloc_irq_vectors(4, 3), -EINVAL);
  EXPECT_EQ(Rig(ToyLayout{true, true, 5}).irq->alloc_irq_vectors(1, 100), 5) << "the capability's table size";
  EXPECT_EQ(Rig(ToyLayout{true, true, 64}).irq->alloc_irq_vectors(1, 100), int(kMsixVectors))
      << "the vectors the transport can signal";
  EXPECT_EQ(Rig(ToyLayout{true, false, kMsixVectors}).irq->alloc_irq_vectors(1, 4), -ENODEV);
}

TEST(IrqDispatcher, EachVectorsHandlerRunsOnTheEpollThread) {
  Rig rig;
  ASSERT_EQ(rig.irq->alloc_irq_vectors(1, kMsixVectors), int(kMsixVectors));
  std::mutex mutex;
  std::vector<std::pair<unsigned, unsigned>> calls;  // (registered for, called with)
  std::set<std::thread::id> threads;
  std::set<std::string> names;
  for (unsigned v = 0; v < kMsixVectors; ++v)
    ASSERT_EQ(rig.irq->request_irq(v, [&, v](unsigned called) {
      std::lock_guard lock(mutex);
      calls.emplace_back(v, called);
      threads.insert(std::this_thread::get_id());
      names.insert(thread_name());
    }), 0);
  for (unsigned v = kMsixVectors; v-- > 0;) {
    ASSERT_TRUE(rig.fire(v));
    ASSERT_TRUE(eventually([&] {
      std::lock_guard lock(mutex);
      return calls.size() == kMsixVectors - v;
    })) << "vector " << v;
    std::lock_guard lock(mutex);
    EXPECT_EQ(calls.back(), std::make_pair(v, v));
  }
  EXPECT_EQ(threads.size(), 1u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
  EXPECT_EQ(names, std::set<std::string>{"pcie-irq"});
  EXPECT_EQ(rig.irq->delivered(), kMsixVectors);
  EXPECT_EQ(rig.irq->spurious(), 0u);
}

TEST(IrqDispatcher, RequestIrqTakesOnlyFreeAllocatedVectors) {
  Rig rig;
  auto nothing = [](unsigned) {};
  EXPECT_EQ(rig.irq->request_irq(0, nothing), -EINVAL) << "before alloc_irq_vectors";
  ASSERT_EQ(rig.irq->alloc_irq_vectors(1, 2), 2);
  EXPECT_EQ(rig.irq->request_irq(2, nothing), -EINVAL) << "not allocated";
  EXPECT_EQ(rig.irq->request_irq(0, nullptr), -EINVAL) << "no handler";
  EXPECT_EQ(rig.irq->request_irq(0, nothing), 0);
  EXPECT_EQ(rig.irq->request_irq(0, nothing), -EINVAL) << "taken";
  rig.irq->free_irq(0);
  rig.irq->free_irq(0);  // twice is harmless, as is an unknown vector
  rig.irq->free_irq(7);
  EXPECT_EQ(rig.irq->request_irq(0, nothing), 0) << "free again";
}

TEST(IrqDispatcher, SignalsWithoutAHandlerAreSpurious) {
  Rig rig;
  ASSERT_EQ(rig.irq->alloc_irq_vectors(1, 3), 3);
  std::atomic<int> calls{0};
  ASSERT_EQ(rig.irq->request_irq(1, [&](unsigned) { ++calls; }), 0);
  rig.fire(0);
  rig.fire(2);
  ASSERT_TRUE(eventually([&] { return rig.irq->spurious() == 2; }));
  rig.fire(1);
  ASSERT_TRUE(eventually([&] { return calls == 1; }));
  EXPECT_EQ(rig.irq->delivered(), 1u);
  EXPECT_EQ(rig.irq->spurious(), 2u);
}

TEST(IrqDispatcher, FreeIrqWaitsForTheRunningHandlerAndStopsDelivery) {
  Rig rig;
  ASSERT_EQ(rig.irq->alloc_irq_vectors(1, 1), 1);
  std::atomic<bool> entered{false}, returned{false};
  std::atomic<int> calls{0};
  ASSERT_EQ(rig.irq->request_irq(0, [&](unsigned) {
    ++calls;
    entered = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    returned = true;
  }), 0);
  rig.fire(0);
  ASSERT_TRUE(eventually([&] { return entered.load(); }));
  rig.irq->free_irq(0);
  EXPECT_TRUE(returned) << "free_irq returned while the handler ran";
  rig.fire(0);
  ASSERT_TRUE(eventually([&] { return rig.irq->spurious() == 1; }));
  EXPECT_EQ(calls, 1);
}

TEST(IrqDispatcher, AHandlerMayFreeItsOwnVector) {
  Rig rig;
  ASSERT_EQ(rig.irq->alloc_irq_vectors(1, 1), 1);
  std::atomic<int> calls{0};
  ASSERT_EQ(rig.irq->request_irq(0, [&](unsigned v) {
    rig.irq->free_irq(v);  // would wait for itself forever
    ++calls;
  }), 0);
  rig.fire(0);
  ASSERT_TRUE(eventually([&] { return calls == 1; }));
  rig.fire(0);
  ASSERT_TRUE(eventually([&] { return rig.irq->spurious() == 1; }));
  EXPECT_EQ(calls, 1);
}

TEST(IrqDispatcher, DestructionJoinsTheThreadAfterTheRunningHandlerAndDisablesMsix) {
  Rig rig;
  ASSERT_EQ(rig.irq->alloc_irq_vectors(1, 2), 2);
  std::atomic<bool> entered{false}, returned{false};
  ASSERT_EQ(rig.irq->request_irq(1, [&](unsigned) {
    entered = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    returned = true;
  }), 0);
  rig.fire(1);
  ASSERT_TRUE(eventually([&] { return entered.load(); }));
  rig.irq.reset();
  EXPECT_TRUE(returned) << "destroyed while its handler ran";
  EXPECT_FALSE(rig.fire(1)) << "the transport has no eventfds left";
  EXPECT_FALSE(rig.msix_flags() & hal::PCI_MSIX_FLAGS_ENABLE);
}

TEST(IrqDispatcher, AnIdleDispatcherStopsAtOnce) {
  Rig rig;
  const auto start = std::chrono::steady_clock::now();
  rig.irq.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
}

// VFIO's error IRQ, as the host's AER reports an uncorrectable error: its handler on the
// epoll thread, apart from the MSI-X vectors' counts; taken away, its eventfd goes back.
TEST(IrqDispatcher, TheErrorIrqRunsItsHandlerUntilTakenAway) {
  Rig rig;
  std::atomic<int> errors{0};
  std::atomic<bool> on_epoll_thread{false};
  ASSERT_EQ(rig.irq->request_error_irq([&] {
    on_epoll_thread = thread_name() == "pcie-irq";
    errors++;
  }), 0);
  ASSERT_TRUE(rig.toy.server.trigger_irq(vfio::kErrIrqIndex, 0));
  ASSERT_TRUE(eventually([&] { return errors == 1; }));
  EXPECT_TRUE(on_epoll_thread);
  EXPECT_EQ(rig.irq->delivered(), 0u);
  EXPECT_EQ(rig.irq->spurious(), 0u);
  EXPECT_EQ(rig.irq->request_error_irq([&] { errors += 10; }), 0) << "a new handler on the same eventfd";
  ASSERT_TRUE(rig.toy.server.trigger_irq(vfio::kErrIrqIndex, 0));
  ASSERT_TRUE(eventually([&] { return errors == 11; }));
  EXPECT_EQ(rig.irq->request_error_irq(nullptr), 0);
  EXPECT_FALSE(rig.toy.server.trigger_irq(vfio::kErrIrqIndex, 0)) << "its eventfd given back";
  EXPECT_EQ(rig.irq->request_error_irq(nullptr), 0) << "twice is harmless";
}

TEST(IrqDispatcher, NoErrorIrqOrARefusingTransportIsSaid) {
  Rig none(ToyLayout{true, true, kMsixVectors, false});
  EXPECT_EQ(none.irq->request_error_irq([] {}), -EOPNOTSUPP);
  for (const char* refused : {"irq_info", "set_irq_eventfds"}) {
    RefusingRig rig(refused);
    EXPECT_EQ(rig.irq.request_error_irq([] {}), -EIO) << refused;
    rig.transport.refuse.clear();
    EXPECT_EQ(rig.irq.request_error_irq([] {}), 0) << "nothing half-done stands in the way";
    EXPECT_TRUE(rig.toy.server.trigger_irq(vfio::kErrIrqIndex, 0));
  }
}

}  // namespace
