// The device model served over vfio-user in a child process, reached by the project's own
// client: its identity and capabilities in configuration space, its registers, the
// backdoor region, MSI-X by eventfd, and a clear end when the server goes.
#include <gtest/gtest.h>

#include <sys/eventfd.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "driver/backends/region_backdoor.h"
#include "driver/backends/vfio_user/client.h"
#include "driver/core/cq.h"
#include "driver/hal/pci_config.h"
#include "driver/irdma/defs.h"
#include "model/testbench/buffered_qp.h"
#include "model/testbench/pcie_system.h"
#include "model/system/server_child.h"

namespace {

using namespace irdma_sim::system;
using namespace irdma_sim::testbench;
namespace vfio = pcie::vfio;

uint32_t config_read(pcie::PciTransport& t, uint32_t offset, size_t size) {
  uint32_t v = 0;
  t.region_read(vfio::kConfigRegionIndex, offset, &v, size);
  return v;
}

TEST(ServedDevice, ShowsItselfAndItsRegisters) {
  SimConfig cfg;
  cfg.device.num_ceqs = 3;
  ServerChild server(cfg, {});
  pcie::vfio_user::VfioUserClient client(server.socket_path());
  const pcie::DeviceInfo info = client.device_info();
  EXPECT_GE(info.num_regions, 10u) << "BARs, config, and the backdoor region";
  EXPECT_EQ(config_read(client, hal::PCI_VENDOR_ID, 2), 0x1234u);
  EXPECT_EQ(config_read(client, hal::PCI_DEVICE_ID, 2), 0x1D02u);
  EXPECT_EQ(client.region(0).size, 32u << 20);
  EXPECT_EQ(client.region(3).size, 64u << 10);
  EXPECT_EQ(client.irq_info(vfio::kMsixIrqIndex).count, 3u + 1u);
  // Memory decode on, then a register: the engine reports ready.
  const uint16_t command = hal::PCI_COMMAND_MEMORY | hal::PCI_COMMAND_MASTER;
  client.region_write(vfio::kConfigRegionIndex, hal::PCI_COMMAND, &command, 2);
  uint32_t status = 0;
  client.region_read(0, irdma::IRDMA_GLPE_CPUSTATUS0, &status, 4);
  EXPECT_EQ(status, irdma::IRDMA_CPU_READY);
  uint64_t wide = 0;
  EXPECT_THROW(client.region_read(0, irdma::IRDMA_CQPTAIL, &wide, 3), pcie::PciTransportError) << "no 3-byte access";
  ASSERT_TRUE(backends::RegionBackdoor::has_backdoor_region(client));
  backends::RegionBackdoor backdoor(client);
  EXPECT_EQ(backdoor.counters().mmio_reads, 1u);
  EXPECT_FALSE(backdoor.inject_fault(7, 0, 2)) << "no QP 7";
}

TEST(ServedDevice, MsixGoesToTheClientsEventfd) {
  ServerChild server(SimConfig{}, {});
  pcie::vfio_user::VfioUserClient client(server.socket_path());
  const uint16_t command = hal::PCI_COMMAND_MEMORY | hal::PCI_COMMAND_MASTER;
  client.region_write(vfio::kConfigRegionIndex, hal::PCI_COMMAND, &command, 2);
  const uint8_t msix = 0x70;
  const uint16_t flags = uint16_t(config_read(client, msix + hal::PCI_MSIX_FLAGS, 2) | hal::PCI_MSIX_FLAGS_ENABLE);
  client.region_write(vfio::kConfigRegionIndex, msix + hal::PCI_MSIX_FLAGS, &flags, 2);
  const int efd = eventfd(0, EFD_NONBLOCK);
  client.set_irq_eventfds(vfio::kMsixIrqIndex, 1, {efd});
  backends::RegionBackdoor backdoor(client);
  backdoor.force_msix(1);
  pollfd p{efd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 2000), 1) << "vector 1's eventfd fired";
  backdoor.force_msix(0);  // no eventfd: a vector the client's host left masked
  const backends::DeviceCounters c = backdoor.counters();
  EXPECT_EQ(c.msix_sent, 1u);
  EXPECT_EQ(c.msix_masked, 1u);
  EXPECT_EQ(c.interrupts_raised, 0u) << "forced, not raised by a cause";
  close(efd);
}

TEST(ServedDevice, AServerThatDiesIsAClearErrorNotAHang) {
  auto server = std::make_unique<ServerChild>(SimConfig{}, ServeOptions{});
  pcie::vfio_user::VfioUserClient client(server->socket_path());
  EXPECT_EQ(config_read(client, hal::PCI_VENDOR_ID, 2), 0x1234u);
  kill(server->pid(), SIGKILL);
  EXPECT_EQ(server->wait(2000), "killed by signal 9 (Killed)");
  uint32_t v = 0;
  EXPECT_THROW(client.region_read(0, irdma::IRDMA_CQPTAIL, &v, 4), pcie::PciTransportError);
}

// The host's DEVICE_RESET resets the served function as an FLR does: its configuration
// space back as at power-on. And the driver comes back from a reset of its own making
// (Host::reprobe's FLR through Device Control) over the socket as in process.
TEST(ServedDevice, ResetsOnDeviceResetAndTheDriverIsProbedAgainAfterAnFlr) {
  ServerChild server(SimConfig{}, {});
  {
    pcie::vfio_user::VfioUserClient client(server.socket_path());
    EXPECT_TRUE(client.device_info().flags & vfio::kDeviceFlagReset);
    const uint16_t command = hal::PCI_COMMAND_MEMORY | hal::PCI_COMMAND_MASTER;
    client.region_write(vfio::kConfigRegionIndex, hal::PCI_COMMAND, &command, 2);
    client.reset();
    EXPECT_EQ(config_read(client, hal::PCI_COMMAND, 2), 0u) << "memory decode and bus mastering off";
    uint32_t status = 0;
    EXPECT_THROW(client.region_read(0, irdma::IRDMA_GLPE_CPUSTATUS0, &status, 4), pcie::PciTransportError)
        << "a BAR access the reset function does not claim";
    EXPECT_EQ(backends::RegionBackdoor(client).counters().function_resets, 1u);
  }
  ServerChild next(SimConfig{}, {});
  PcieSystem host(std::make_unique<pcie::vfio_user::VfioUserClient>(next.socket_path()), irdma::irdma_params{});
  EXPECT_EQ(host.reprobe(), 0) << host.driver().probe_error();
  EXPECT_EQ(host.backdoor()->counters().function_resets, 1u);
  ibcore::ib_cq* cq = nullptr;
  host.run_on_host([&] { cq = ibcore::ib_alloc_cq(&host.driver(), nullptr, 16, 0, ibcore::IB_POLL_DIRECT).get(); });
  ASSERT_NE(cq, nullptr) << "a CQ on the driver probed again";
  EXPECT_EQ(ibcore::ib_free_cq(cq), 0);
}

// A model behind the wall clock (SQs retrying every cycle on peers with no receive posted)
// still answers the host at once, and the sends complete once the receives are posted.
TEST(ServedDevice, AModelBehindTheWallClockStillAnswersTheHost) {
  constexpr int kPairs = 16;
  SimConfig cfg;
  cfg.device.rnr_retry_cycles = 1;
  ServerChild server(cfg, {});
  PcieSystem host(std::make_unique<pcie::vfio_user::VfioUserClient>(server.socket_path()), irdma::irdma_params{});
  irdma::irdma_device& dev = host.driver();
  ibcore::ib_cq* cq = ibcore::ib_alloc_cq(&dev, nullptr, 4 * kPairs, 0, ibcore::IB_POLL_DIRECT).get();
  ASSERT_NE(cq, nullptr);
  int done = 0;
  cq->cq_context = &done;
  ibcore::ib_cqe cqe{[](ibcore::ib_cq* c, ibcore::ib_wc*) { ++*static_cast<int*>(c->cq_context); }};
  std::vector<std::unique_ptr<BufferedQp>> senders, receivers;
  for (int i = 0; i < kPairs; i++) {
    int err = 0;
    senders.emplace_back(BufferedQp::create(dev, cq, 4, 4, 64, err));
    ASSERT_EQ(err, 0);
    receivers.emplace_back(BufferedQp::create(dev, cq, 4, 4, 64, err));
    ASSERT_EQ(err, 0);
    ASSERT_EQ(dev.connect_qp(senders[i]->qp(), receivers[i]->qp_num()), 0);
    ASSERT_EQ(dev.connect_qp(receivers[i]->qp(), senders[i]->qp_num()), 0);
  }
  for (auto& qp : senders) {
    const ibcore::ib_sge sge = qp->send_sge(0, 8);
    ibcore::ib_send_wr send;
    send.wr_cqe = &cqe;
    send.sg_list = &sge;
    send.num_sge = 1;
    send.send_flags = ibcore::IB_SEND_SIGNALED;
    ASSERT_EQ(dev.post_send(qp->qp(), &send, nullptr), 0);
  }

  // The server stopped a while (preempted, paused): the wall clock ran on without the
  // model, which has 2 s to make up while its SQs storm. Messages are served between slices
  // of catching up, not after it: a server that caught up first answered the first read
  // after 0.5 s here, and a model slower than real time (under a sanitizer) never.
  ASSERT_GT(host.backdoor()->counters().rnr_stalls, 0u) << "the SQs retry";
  kill(server.pid(), SIGSTOP);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  kill(server.pid(), SIGCONT);
  for (int i = 0; i < 5; i++) {
    const auto asked = std::chrono::steady_clock::now();
    host.backdoor()->counters();
    EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::milliseconds(200)) << "read " << i;
  }
  EXPECT_EQ(host.host_counters().mmio_errors, 0u) << host.host_counters().last_mmio_error;

  for (auto& qp : receivers) {
    const ibcore::ib_sge sge = qp->recv_sge(0);
    ibcore::ib_recv_wr recv;
    recv.wr_cqe = &cqe;
    recv.sg_list = &sge;
    recv.num_sge = 1;
    ASSERT_EQ(dev.post_recv(qp->qp(), &recv, nullptr), 0);
  }
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       done < 2 * kPairs && std::chrono::steady_clock::now() < deadline;)
    ibcore::ib_process_cq_direct(cq, -1);
  EXPECT_EQ(done, 2 * kPairs) << "the sends and their receives";
  for (auto* qps : {&senders, &receivers})
    for (auto& qp : *qps) EXPECT_EQ(qp->destroy(), 0);
  EXPECT_EQ(ibcore::ib_free_cq(cq), 0);
}

}  // namespace
