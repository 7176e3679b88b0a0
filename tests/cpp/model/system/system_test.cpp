// Whole-system tests: each elaborates its own simulation, so ctest runs each in its own
// process.
#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "driver/core/cq.h"
#include "driver/core/cq_pool.h"
#include "driver/hal/pci_config.h"
#include "model/device/regs.h"
#include "model/testbench/host_session.h"
#include "model/system/run_scenario.h"
#include "model/system/simulation.h"
#include "model/trace/trace_reader.h"

namespace {

using namespace irdma_sim::system;
using namespace irdma_sim::testbench;

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A QP of `depth` sends and receives, both on `cq`.
ibcore::ib_qp_init_attr attr_for(ibcore::ib_cq* cq, uint32_t depth) {
  ibcore::ib_qp_init_attr attr;
  attr.send_cq = attr.recv_cq = cq;
  attr.cap.max_send_wr = attr.cap.max_recv_wr = depth;
  return attr;
}

// Two QPs of 4 on `cq`, connected to each other.
std::pair<irdma::irdma_qp*, irdma::irdma_qp*> connected_pair(irdma::irdma_device& dev, ibcore::ib_cq* cq) {
  ibcore::ib_qp_init_attr attr = attr_for(cq, 4);
  irdma::irdma_qp* a = dev.create_qp(attr).get();
  irdma::irdma_qp* b = dev.create_qp(attr).get();
  dev.connect_qp(a, b->qp_num);
  dev.connect_qp(b, a->qp_num);
  return {a, b};
}

// One receive on `b` and one signaled send on `a`; what `cq` holds 20 us later (up to 4).
int send_once(irdma::irdma_device& dev, ibcore::ib_cq* cq, irdma::irdma_qp* a, const ibcore::ib_sge& send_sge,
              irdma::irdma_qp* b, const ibcore::ib_sge& recv_sge, ibcore::ib_wc (&wc)[4]) {
  ibcore::ib_recv_wr rwr;
  rwr.sg_list = &recv_sge;
  rwr.num_sge = 1;
  dev.post_recv(b, &rwr, nullptr);
  ibcore::ib_send_wr swr;
  swr.sg_list = &send_sge;
  swr.num_sge = 1;
  swr.send_flags = ibcore::IB_SEND_SIGNALED;
  dev.post_send(a, &swr, nullptr);
  dev.hw().exec.delay_ns(20000);
  return ibcore::ib_poll_cq(cq, 4, wc);
}

// A session with one pool CQ and a loopback QP pair on it.
struct PairSession {
  HostSession s{std::make_unique<Simulation>(SimConfig{})};
  uint32_t cq = s.pool_get(64, -1, ibcore::IB_POLL_SOFTIRQ);
  uint32_t a = 0, b = 0;
  explicit PairSession(uint32_t max_msg_bytes = 64) {
    std::tie(a, b) = s.create_qp_pair(cq, cq, 8, 8, max_msg_bytes);
  }
};

TEST(System, SmokeScenarioPassesEveryCheck) {
  const std::string out = ::testing::TempDir() + "irdma_sim_system_test_smoke";
  const RunResult r = run_scenario(IRDMA_SIM_SOURCE_DIR "/scenarios/smoke.yaml", out);
  const std::string report = slurp(r.report_path);
  EXPECT_TRUE(r.passed) << report;
  EXPECT_NE(report.find("\"completions_delivered\":12000"), std::string::npos) << report;
  EXPECT_EQ(report.find("\"passed\":false"), std::string::npos) << report;
  std::string trace, line;
  irdma_sim::trace::TraceReader events(out + "/trace.bin");
  while (events.next(line)) trace += line + "\n";
  EXPECT_NE(trace.find("\"ev\":\"cqe\""), std::string::npos);
  EXPECT_NE(trace.find("\"ev\":\"dma_write\""), std::string::npos);
  EXPECT_NE(trace.find("\"ev\":\"mmio_write\""), std::string::npos);
}

TEST(System, SessionMovesBytesAndReportsBothCompletions) {
  PairSession p(256);
  auto& [s, cq, a, b] = p;
  const uint64_t rwr = s.post_recv(b);
  const uint64_t swr = s.post_send(a, "hello, irdma", 0x01020304u, true, false);
  std::vector<PolledCompletion> got;
  for (int i = 0; i < 100 && got.size() < 2; i++) {
    s.run_for_ns(1000);
    for (auto& c : s.poll(cq, 16)) got.push_back(c);
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].wr_id, rwr);
  EXPECT_EQ(got[0].wc.opcode, ibcore::IB_WC_RECV);
  EXPECT_EQ(got[0].data, "hello, irdma");
  EXPECT_EQ(got[0].wc.wc_flags, ibcore::IB_WC_WITH_IMM);
  EXPECT_EQ(__builtin_bswap32(got[0].wc.ex.imm_data), 0x01020304u);
  EXPECT_EQ(got[0].qp_num, b);
  EXPECT_EQ(got[1].wr_id, swr);
  EXPECT_EQ(got[1].wc.opcode, ibcore::IB_WC_SEND);
  EXPECT_EQ(got[1].wc.byte_len, 12u);
  EXPECT_EQ(s.counters().at("extended_cqes"), 1u);
  s.shutdown();
}

TEST(System, SendWithoutAReceiveWaitsForOne) {
  PairSession p;
  auto& [s, cq, a, b] = p;
  s.post_send(a, "x", std::nullopt, true, false);
  s.run_for_ns(20000);
  EXPECT_TRUE(s.poll(cq, 4).empty());
  EXPECT_GT(s.counters().at("rnr_stalls"), 0u);
  s.post_recv(b);
  s.run_for_ns(20000);
  EXPECT_EQ(s.poll(cq, 4).size(), 2u);
}

// Every post rings the doorbell, and each doorbell that finds the peer's RQ empty stalls.
// The SQ waits out the RNR with one retry timer: eight doorbells must not become eight
// retry chains (they once did, and under moderated interrupts the retries outran the
// device, holding interrupts back by half a millisecond).
TEST(System, DoorbellsOnAnRnrStalledSqShareOneRetryTimer) {
  PairSession p;
  auto& [s, cq, a, b] = p;
  for (int i = 0; i < 8; i++) s.post_send(a, "x", std::nullopt, true, false);
  const uint64_t retry_ns = 2000 * 2;  // rnr_retry_cycles at 500 MHz
  s.run_for_ns(100 * retry_ns);
  const uint64_t stalls = s.counters().at("rnr_stalls");
  EXPECT_GE(stalls, 60u);  // each retry also spends time reading the RQ and the SQ
  EXPECT_LE(stalls, 110u) << "one retry every " << retry_ns << " ns, whatever the doorbells";
  for (int i = 0; i < 8; i++) s.post_recv(b);
  s.run_for_ns(20 * retry_ns);
  EXPECT_EQ(s.poll(cq, 32).size(), 16u);
}

// GEN_2: one flush CQE per queue, expanded by the driver (GEN_3 is covered by pytest: one
// elaboration per process).
TEST(System, InjectedFaultFlushesBothQueuesThroughTheDriver) {
  using namespace ibcore;
  PairSession p;
  auto& [s, cq, a, b] = p;
  for (int i = 0; i < 4; i++) s.post_recv(b);
  std::vector<uint64_t> recvs, sends;
  for (int i = 0; i < 3; i++) recvs.push_back(s.post_recv(a));
  s.inject_fault(a, 2, 3);  // the third request fails with FLUSH_REM_ACCESS_ERR
  for (int i = 0; i < 4; i++) sends.push_back(s.post_send(a, "0123456789", std::nullopt, true, false));
  std::map<uint64_t, ib_wc_status> status;
  for (int i = 0; i < 100; i++) {
    s.run_for_ns(500);
    for (const auto& c : s.poll(cq, 16)) status[c.wr_id] = c.wc.status;
  }
  EXPECT_EQ(status.at(sends[1]), IB_WC_SUCCESS);
  EXPECT_EQ(status.at(sends[2]), IB_WC_REM_ACCESS_ERR);
  EXPECT_EQ(status.at(sends[3]), IB_WC_WR_FLUSH_ERR);
  EXPECT_EQ(status.at(recvs[0]), IB_WC_REM_ACCESS_ERR);
  EXPECT_EQ(status.at(recvs[2]), IB_WC_WR_FLUSH_ERR);
  EXPECT_EQ(s.counters().at("flush_cqes"), 2u);
  s.shutdown();
}

TEST(System, RetriesOfADestroyedQpAreDroppedQuietly) {
  PairSession p;
  auto& [s, cq, a, b] = p;
  s.post_send(a, "x", std::nullopt, true, false);
  s.run_for_ns(10000);
  ASSERT_GT(s.counters().at("rnr_stalls"), 0u) << "a retry is pending";
  s.destroy_qp(a);
  s.run_for_ns(20000);
  EXPECT_EQ(s.counters().at("bad_doorbells"), 0u);
  EXPECT_EQ(s.counters().at("wqe_errors"), 0u);
}

TEST(System, DmaToUnmappedMemoryIsReportedNotFatal) {
  Simulation sim(SimConfig{});
  auto& dev = sim.driver();
  int failures = 0;
  sim.run_on_host([&] {
    auto cq = ibcore::ib_alloc_cq(&dev, nullptr, 16, 0, ibcore::IB_POLL_DIRECT);  // polled here
    auto [a, b] = connected_pair(dev, cq.get());
    // A receive buffer and a send buffer nobody mapped.
    const ibcore::ib_sge nowhere{0x7000'0000'0000ull, 64, 0};
    ibcore::ib_wc wc[4]{};
    const int n = send_once(dev, cq.get(), a, nowhere, b, nowhere, wc);
    for (int i = 0; i < n; i++) {
      if (wc[i].status == ibcore::IB_WC_SUCCESS) continue;
      failures++;
      // The sender's own buffer is unreadable: a protection error moves its QP to error,
      // and the flush reports the send with it.
      EXPECT_EQ(wc[i].status, ibcore::IB_WC_LOC_PROT_ERR);
      EXPECT_EQ(wc[i].vendor_err, 0x00010002u);
      EXPECT_EQ(wc[i].qp, static_cast<ibcore::ib_qp*>(a));
    }
  });
  EXPECT_GT(sim.link().dma_errors() + sim.device().dma_errors(), 0u);
  EXPECT_EQ(failures, 1) << "the send completes in error once; nothing crashes";
  EXPECT_EQ(sim.device().qp_engine().counters().qps_in_error, 1u);
}

// Every SQ WQE fetch refused (Completer Abort): the device cannot know the request, and the
// QP is lost as on a catastrophic error. Both queues flush, the first of each with
// FLUSH_FATAL_ERR; nothing stalls, and no DMA error is counted for a fault injected.
TEST(System, ARefusedWqeFetchPutsItsQpInErrorWithAFatalFlush) {
  using namespace ibcore;
  SimConfig cfg;
  cfg.link.faults.wqe_read_error_rate = 1;
  HostSession s{std::make_unique<Simulation>(cfg)};
  const uint32_t cq = s.pool_get(64, -1, IB_POLL_SOFTIRQ);
  const auto [a, b] = s.create_qp_pair(cq, cq, 8, 8, 64);
  const uint64_t recv = s.post_recv(a);
  s.post_recv(b);
  const uint64_t send = s.post_send(a, "0123", std::nullopt, true, false);
  const uint64_t next = s.post_send(a, "4567", std::nullopt, true, false);
  std::map<uint64_t, ib_wc> wcs;
  for (int i = 0; i < 100 && wcs.size() < 3; i++) {
    s.run_for_ns(1000);
    for (const auto& c : s.poll(cq, 16)) wcs[c.wr_id] = c.wc;
  }
  ASSERT_EQ(wcs.count(send) + wcs.count(next) + wcs.count(recv), 3u);
  EXPECT_EQ(wcs[send].status, IB_WC_FATAL_ERR);
  EXPECT_EQ(wcs[send].vendor_err, 0x00010007u);
  EXPECT_EQ(wcs[next].status, IB_WC_WR_FLUSH_ERR);
  EXPECT_EQ(wcs[recv].status, IB_WC_FATAL_ERR);
  const auto c = s.counters();
  EXPECT_EQ(c.at("wqe_fetch_errors"), 1u);
  EXPECT_EQ(c.at("wqe_reads_failed"), 1u);
  EXPECT_EQ(c.at("wqe_errors"), 0u);
  EXPECT_EQ(c.at("dma_errors"), 0u);
  EXPECT_EQ(c.at("messages"), 0u) << "nothing of the refused fetch was carried out";
  s.shutdown();
}

// An arm whose shadow area read is refused: the device cannot know what the driver asked
// for, so the CQ is lost (LCE_CQ_CATASTROPHIC), the driver reports IB_EVENT_CQ_ERR, and the
// CQ takes no more CQEs. The CCQ's arms are never struck: the control path still works.
TEST(System, ARefusedShadowReadLosesTheCqAndTheDriverReportsIt) {
  using namespace ibcore;
  SimConfig cfg;
  cfg.link.faults.shadow_read_error_rate = 1;
  HostSession s{std::make_unique<Simulation>(cfg)};
  const uint32_t cq = s.alloc_cq(16, 0);
  const auto [a, b] = s.create_qp_pair(cq, cq, 4, 4, 64);  // CQP commands after the fault work
  s.post_recv(b);
  ASSERT_EQ(s.req_notify_cq(cq, IB_CQ_NEXT_COMP), 0);
  s.run_for_ns(5000);
  EXPECT_EQ(s.cq_events(cq).at("cq_errors"), 1u);
  EXPECT_EQ(s.counters().at("cqs_catastrophic"), 1u);
  s.post_send(a, "lost", std::nullopt, true, false);
  s.run_for_ns(5000);
  EXPECT_TRUE(s.poll(cq, 4).empty()) << "a CQ in error takes no CQE";
  EXPECT_EQ(s.counters().at("messages"), 1u);
  EXPECT_EQ(s.counters().at("cqes_written"), 0u);
  s.shutdown();
}

// The control QP wedges: the command in hand times out after the driver's CQP timeout,
// and the driver gives the device up (irdma's reset request): it stops the function
// mastering the bus, flushes every QP's work in software, tells its client
// (IB_EVENT_DEVICE_FATAL); later creates fail at once, destroys go on without the device.
TEST(System, ACqpCommandThatNeverCompletesGivesTheDeviceUp) {
  using namespace ibcore;
  SimConfig cfg;
  cfg.device.cqp_hang_after_ns = 100'000'000;  // long after bring-up
  cfg.driver.cqp_timeout_ms = 1;
  HostSession s{std::make_unique<Simulation>(cfg)};
  s.run_for_ns(100'000'000);
  std::vector<ib_event_type> events;
  s.host().driver().event_handler = [&](const ib_event& ev) { events.push_back(ev.event); };
  const uint64_t commands = s.counters().at("cqp_commands");  // bring-up's
  // The driver's verb itself: its errno, no exception thrown across the simulation's stacks.
  const auto alloc_cq = [&] {
    int err = 0;
    s.host().run_on_host([&] {
      auto cq = ib_alloc_cq(&s.host().driver(), nullptr, 16, 0, IB_POLL_DIRECT);
      err = cq.is_err() ? cq.err() : 0;
      if (!err) ib_free_cq(cq.get());
    });
    return err;
  };
  EXPECT_EQ(alloc_cq(), -ETIMEDOUT);
  EXPECT_EQ(events, std::vector<ib_event_type>{IB_EVENT_DEVICE_FATAL});
  EXPECT_EQ(s.host().driver().event_counters().resets_requested, 1u);
  uint16_t command = 0;
  s.host().run_on_host([&] { command = s.host().driver().hw().config.read16(hal::PCI_COMMAND); });
  EXPECT_EQ(command & hal::PCI_COMMAND_MASTER, 0) << "the function still masters the bus";
  const uint64_t t0 = s.now_ps();
  EXPECT_EQ(alloc_cq(), -EBUSY) << "a create on a device given up";
  EXPECT_LT(s.now_ps() - t0, 1'000'000u) << "a create after the device was given up waited for it";
  EXPECT_EQ(s.counters().at("cqp_commands"), commands) << "the wedged command was executed";
  s.host().driver().event_handler = nullptr;
  // Destroys go on without the device; the function's reset undoes the wedge.
  s.recover();
  EXPECT_EQ(alloc_cq(), 0) << "a create after recovery";
  EXPECT_EQ(s.counters().at("function_resets"), 1u) << "recovery reset the function";
  s.shutdown();
}

// The function reset under the driver mid-traffic: the watchdog finds it, the device is
// given up (what was in flight completes as flushed, each request once), and the driver,
// probed again on the same function, drives it as new.
TEST(System, AFunctionResetIsFoundAndTheDriverProbedAgainDrivesTheDevice) {
  using namespace ibcore;
  SimConfig cfg;
  // Ready 50 us after power-on and after the reset: each probe waits a poll (1 s) for it.
  const uint64_t reset_ns = 1'500'000'000;
  cfg.device.function_reset_at_ns = reset_ns;
  cfg.device.ready_after_us = 50;
  cfg.driver.eq_watchdog_us = 100;
  HostSession s{std::make_unique<Simulation>(cfg)};
  std::vector<ib_event_type> events;
  s.host().driver().event_handler = [&](const ib_event& ev) { events.push_back(ev.event); };
  const auto traffic = [&s](uint32_t cq, uint32_t a, uint32_t b, uint64_t run_ns) {
    const uint64_t recv = s.post_recv(b);
    const uint64_t send = s.post_send(a, "across a reset", std::nullopt, true, false);
    std::map<uint64_t, ib_wc_status> status;
    for (int i = 0; i < 100 && status.size() < 2; i++) {
      s.run_for_ns(run_ns);
      for (const auto& c : s.poll(cq, 16)) EXPECT_TRUE(status.emplace(c.wr_id, c.wc.status).second) << c.wr_id;
    }
    EXPECT_EQ(status.size(), 2u);
    return std::pair{status[send], status[recv]};
  };
  uint32_t cq = s.pool_get(64, -1, IB_POLL_SOFTIRQ);
  auto [a, b] = s.create_qp_pair(cq, cq, 8, 8, 64);
  EXPECT_EQ(traffic(cq, a, b, 1000), std::pair(IB_WC_SUCCESS, IB_WC_SUCCESS)) << "before the reset";
  ASSERT_LT(s.now_ps() / 1000, reset_ns);
  s.run_for_ns(reset_ns - s.now_ps() / 1000);
  EXPECT_EQ(traffic(cq, a, b, 1'000'000), std::pair(IB_WC_WR_FLUSH_ERR, IB_WC_WR_FLUSH_ERR)) << "after it";
  EXPECT_EQ(events, std::vector<ib_event_type>{IB_EVENT_DEVICE_FATAL});
  const auto ev = s.host().driver().event_counters();
  EXPECT_EQ(ev.resets_on_function_lost, 1u);
  EXPECT_EQ(ev.resets_requested, 1u);
  auto counters = s.counters();
  EXPECT_EQ(counters.at("function_resets"), 1u);
  EXPECT_GT(counters.at("mmio_refused_in_reset"), 0u) << "the doorbell rung before the driver knew";
  s.host().driver().event_handler = nullptr;

  s.recover();
  EXPECT_EQ(s.host().driver().event_counters().resets_requested, 0u) << "a new driver";
  cq = s.pool_get(64, -1, IB_POLL_SOFTIRQ);
  std::tie(a, b) = s.create_qp_pair(cq, cq, 8, 8, 64);
  EXPECT_EQ(traffic(cq, a, b, 1000), std::pair(IB_WC_SUCCESS, IB_WC_SUCCESS)) << "after recovery";
  s.shutdown();
  counters = s.counters();
  EXPECT_EQ(counters.at("function_resets"), 2u) << "the fault's, and the FLR recovery made";
  EXPECT_EQ(counters.at("bad_mmio"), 0u);
  const uint64_t refused_in_reset = counters.at("mmio_refused_in_reset");
  // Once the host took the function back, a refused access is an error again, not the reset's.
  s.host().run_on_host([&] {
    hal::Platform& hw = s.host().driver().hw();
    hw.config.write(hal::PCI_COMMAND, 2, 0);
    EXPECT_EQ(hw.bar0.read32(irdma_sim::device::regs::GLPE_CPUSTATUS0), ~0u);
  });
  counters = s.counters();
  EXPECT_EQ(counters.at("bad_mmio"), 1u);
  EXPECT_EQ(counters.at("mmio_refused_in_reset"), refused_in_reset);
}

// A driver is probed again only once nothing made on it is held: a CQ still allocated
// keeps it (EBUSY), freed it goes.
TEST(System, ReprobeWaitsForEveryObjectMadeOnTheDriver) {
  using namespace ibcore;
  Simulation sim{SimConfig{}};
  ib_cq* cq = nullptr;
  sim.run_on_host([&] { cq = ib_alloc_cq(&sim.driver(), nullptr, 16, 0, IB_POLL_DIRECT).get(); });
  ASSERT_NE(cq, nullptr);
  EXPECT_EQ(sim.reprobe(), -EBUSY);
  sim.run_on_host([&] { EXPECT_EQ(ib_free_cq(cq), 0); });
  EXPECT_EQ(sim.reprobe(), 0);
  sim.run_on_host([&] {
    auto again = ib_alloc_cq(&sim.driver(), nullptr, 16, 0, IB_POLL_DIRECT);
    ASSERT_FALSE(again.is_err());
    EXPECT_EQ(ib_free_cq(again.get()), 0);
    sim.driver().remove();
  });
}

// Every CQE write refused by the host (posted: the device is not told): the root port
// reports it (AER), the driver gives the device up, and the work whose CQEs never landed
// completes in software as flushed, each request once.
TEST(System, ARefusedCqeWriteIsReportedAndTheDeviceGivenUp) {
  using namespace ibcore;
  SimConfig cfg;
  cfg.link.faults.cqe_write_error_rate = 1;
  HostSession s{std::make_unique<Simulation>(cfg)};
  std::vector<ib_event_type> events;
  s.host().driver().event_handler = [&](const ib_event& ev) { events.push_back(ev.event); };
  const uint32_t cq = s.pool_get(64, -1, IB_POLL_SOFTIRQ);
  const auto [a, b] = s.create_qp_pair(cq, cq, 8, 8, 64);
  const uint64_t recv = s.post_recv(b);
  const uint64_t send = s.post_send(a, "lost", std::nullopt, true, false);
  std::map<uint64_t, ib_wc_status> status;
  for (int i = 0; i < 100 && status.size() < 2; i++) {
    s.run_for_ns(1'000'000);
    for (const auto& c : s.poll(cq, 16)) EXPECT_TRUE(status.emplace(c.wr_id, c.wc.status).second) << c.wr_id;
  }
  EXPECT_EQ(status[send], IB_WC_WR_FLUSH_ERR);
  EXPECT_EQ(status[recv], IB_WC_WR_FLUSH_ERR);
  EXPECT_EQ(events, std::vector<ib_event_type>{IB_EVENT_DEVICE_FATAL});
  const auto ev = s.host().driver().event_counters();
  EXPECT_GE(ev.pci_errors, 1u);
  EXPECT_EQ(ev.resets_requested, 1u) << "the device was given up once, whatever the errors";
  EXPECT_EQ(s.counters().at("messages"), 1u) << "the device carried the send out";
  s.shutdown();
  s.host().driver().event_handler = nullptr;
}

// A SEND larger than the receive waiting for it: the responder's receive fails with a
// length error and the requester's send with a remote invalid request; both QPs move to
// error (IB semantics for RC).
TEST(System, ASendTooLargeForItsReceiveFailsBothSides) {
  Simulation sim(SimConfig{});
  auto& dev = sim.driver();
  std::map<uint32_t, std::pair<int, uint32_t>> seen;  // qp -> (status, vendor_err)
  sim.run_on_host([&] {
    auto cq = ibcore::ib_alloc_cq(&dev, nullptr, 16, 0, ibcore::IB_POLL_DIRECT);
    auto [a, b] = connected_pair(dev, cq.get());
    hal::DmaBuffer buf = dev.hw().dma.alloc_coherent(4096, 64);
    const ibcore::ib_sge small{buf.iova, 16, 0}, large{buf.iova + 1024, 64, 0};
    ibcore::ib_wc wc[4]{};
    const int n = send_once(dev, cq.get(), a, large, b, small, wc);
    for (int i = 0; i < n; i++) seen[wc[i].qp->qp_num] = {wc[i].status, wc[i].vendor_err};
    EXPECT_EQ(seen[a->qp_num], std::make_pair(int(ibcore::IB_WC_REM_INV_REQ_ERR), 0x1000Au));
    EXPECT_EQ(seen[b->qp_num], std::make_pair(int(ibcore::IB_WC_LOC_LEN_ERR), 0x10006u));
  });
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_EQ(sim.device().qp_engine().counters().qps_in_error, 2u);
}

TEST(System, MsixReachesOnlyTheVectorsTheDriverAllocated) {
  SimConfig cfg;
  cfg.device.spare_msix = 1;  // a third table entry, which the driver does not ask for
  Simulation sim(cfg);
  auto& irq = sim.driver().hw().irq;
  EXPECT_EQ(irq.num_vectors(), 2u) << "one per CEQ and the AEQ's";
  EXPECT_EQ(irq.request_irq(2, [](unsigned) {}), -EINVAL) << "not allocated";
  EXPECT_EQ(irq.request_irq(0, [](unsigned) {}), -EINVAL) << "the driver's";
  auto& dev = sim.device();
  const uint64_t handled = sim.driver().event_counters().interrupts;
  const uint64_t sent = dev.counters().msix_sent;
  dev.schedule_msix(0);  // CEQ 0's: the driver's handler runs and finds no CEQE
  dev.schedule_msix(2);  // its entry was never unmasked
  dev.schedule_msix(7);  // no such vector
  sim.run_on_host([&] { sim.driver().hw().exec.delay_ns(5000); });
  EXPECT_EQ(sim.driver().event_counters().interrupts, handled + 1);
  EXPECT_EQ(dev.counters().msix_sent, sent + 1);
  EXPECT_EQ(dev.counters().msix_masked, 2u);
  // free_irq (at remove) masks the entries again: the device sends nothing.
  sim.run_on_host([&] { EXPECT_EQ(sim.driver().remove(), 0); });
  dev.schedule_msix(0);
  sim.run_on_host([&] { sim.driver().hw().exec.delay_ns(5000); });
  EXPECT_EQ(dev.counters().msix_masked, 3u);
  EXPECT_EQ(sim.interrupts().spurious(), 0u);
}

// PCIe's MSI-X rules: a message raised while its entry is masked waits, its PBA bit set, and
// goes when the entry is unmasked. Here the host masks vector 0 as each of its interrupts
// comes in (link.faults.msix_mask_rate 1) and unmasks it up to 100 us later.
TEST(System, AMessageRaisedWhileItsVectorIsMaskedWaitsAndGoesOnUnmask) {
  SimConfig cfg;
  cfg.link.faults.msix_mask_rate = 1;
  cfg.link.faults.msix_mask_max_ns = 100000;
  Simulation sim(cfg);
  auto& dev = sim.device();
  const uint64_t handled = sim.driver().event_counters().interrupts;
  const auto wait_ns = [&](uint64_t ns) { sim.run_on_host([&] { sim.driver().hw().exec.delay_ns(ns); }); };
  dev.schedule_msix(0);
  wait_ns(5000);
  ASSERT_EQ(sim.driver().event_counters().interrupts, handled + 1);
  ASSERT_EQ(sim.interrupts().masked_by_fault(), 1u) << "the host masked vector 0 as it came in";
  dev.schedule_msix(0);  // raised while masked
  wait_ns(1000);
  EXPECT_EQ(sim.driver().event_counters().interrupts, handled + 1) << "sent through a masked entry";
  EXPECT_EQ(dev.counters().msix_masked, 1u);
  wait_ns(200000);  // past the unmask
  EXPECT_EQ(sim.driver().event_counters().interrupts, handled + 2) << "lost, not held in the PBA";
  EXPECT_EQ(dev.counters().msix_sent_on_unmask, 1u);
}

// The execution services a backend gives the driver (hal::Exec), on simulated time.
TEST(System, WorkersEventsAndLocksRunOnSimulatedTime) {
  Simulation sim(SimConfig{});
  hal::Exec& exec = sim.driver().hw().exec;
  std::vector<std::string> log;
  uint64_t woke_at = 0;
  sim.run_on_host([&] {
    auto lock = exec.make_lock();
    // Both workers want the lock at once and hold it across a wait: they take turns.
    for (int w = 0; w < 2; w++) {
      exec.spawn("worker" + std::to_string(w), unsigned(w), [&, w] {
        lock->lock();
        log.push_back("in " + std::to_string(w));
        exec.delay_ns(100);
        log.push_back("out " + std::to_string(w));
        lock->unlock();
      });
    }
    auto ready = exec.make_event();
    const uint64_t t0 = exec.now_ns();
    EXPECT_FALSE(ready->wait_for(50)) << "nobody signalled";
    EXPECT_EQ(exec.now_ns() - t0, 50u);
    exec.spawn("signaller", 0, [&] {
      exec.delay_ns(30);
      ready->signal();
    });
    EXPECT_TRUE(ready->wait_for(1000));
    woke_at = exec.now_ns() - t0;
    exec.delay_ns(1000);
  });
  EXPECT_EQ(woke_at, 80u) << "woken by the signal, not the timeout";
  EXPECT_EQ(log, (std::vector<std::string>{"in 0", "out 0", "in 1", "out 1"}));
}

TEST(System, OnlyOneSimulationPerProcess) {
#if defined(__SANITIZE_ADDRESS__)
  // SystemC switches coroutine stacks without telling ASan, which then cannot unpoison
  // the stack when this test throws, and reports false stack overflows afterwards.
  GTEST_SKIP() << "throws across SystemC's coroutine stacks, which ASan cannot follow";
#endif
  Simulation sim(SimConfig{});
  EXPECT_THROW(Simulation again(SimConfig{}), std::logic_error);
}

}  // namespace

// ib_qp_cap comes back with what the queues hold; the driver refuses a post past its ring
// with -ENOMEM, names it in bad_wr, writes no WQE and rings no doorbell for it.
TEST(System, APostPastTheRingIsEnomemAndWritesNothing) {
  Simulation sim(SimConfig{});
  auto& dev = sim.driver();
  sim.run_on_host([&] {
    auto cq = ibcore::ib_alloc_cq(&dev, nullptr, 1024, 0, ibcore::IB_POLL_DIRECT);
    ibcore::ib_qp_init_attr attr = attr_for(cq.get(), 4);
    auto qp = dev.create_qp(attr);
    ASSERT_FALSE(qp.is_err());
    // irdma's sizing: (512 quanta - 258 reserved) >> 1 and 8 WQEs - 1.
    EXPECT_EQ(attr.cap.max_send_wr, 127u);
    EXPECT_EQ(attr.cap.max_recv_wr, 7u);
    hal::DmaBuffer buf = dev.hw().dma.alloc_coherent(4096, 64);
    ibcore::ib_sge sge{buf.iova, 8, 0};
    ibcore::ib_recv_wr rwr;
    rwr.sg_list = &sge;
    rwr.num_sge = 1;
    for (uint32_t i = 0; i < attr.cap.max_recv_wr; i++) ASSERT_EQ(dev.post_recv(qp.get(), &rwr, nullptr), 0);
    const irdma::irdma_qp_uk& uk = qp->qp_uk;
    const uint32_t rq_head = uk.rq_ring.head;
    const ibcore::ib_recv_wr* bad_recv = nullptr;
    EXPECT_EQ(dev.post_recv(qp.get(), &rwr, &bad_recv), -ENOMEM);
    EXPECT_EQ(bad_recv, &rwr);
    EXPECT_EQ(uk.rq_ring.head, rq_head);

    // A chain of sends no peer takes: the ring fills, the WR that does not fit is the bad
    // one, and only the doorbell for what fitted was rung.
    std::vector<ibcore::ib_send_wr> chain(300);
    for (size_t i = 0; i < chain.size(); i++) {
      chain[i].sg_list = &sge;
      chain[i].num_sge = 1;
      chain[i].next = i + 1 < chain.size() ? &chain[i + 1] : nullptr;
    }
    // The QP, connected to no one, fails its first send: the AEQ's handler writes registers too.
    const uint64_t doorbells = sim.device().counters().sq_doorbells;
    const ibcore::ib_send_wr* bad = nullptr;
    EXPECT_EQ(dev.post_send(qp.get(), chain.data(), &bad), -ENOMEM);
    ASSERT_NE(bad, nullptr);
    const size_t fitted = size_t(bad - chain.data());
    EXPECT_GE(fitted, attr.cap.max_send_wr);
    const uint32_t sq_head = uk.sq_ring.head;
    dev.hw().exec.delay_ns(2000);
    EXPECT_EQ(sim.device().counters().sq_doorbells, doorbells + 1) << "one doorbell, for the WRs that fitted";
    EXPECT_EQ(dev.post_send(qp.get(), chain.data() + fitted, &bad), -ENOMEM);
    EXPECT_EQ(bad, chain.data() + fitted);
    EXPECT_EQ(uk.sq_ring.head, sq_head) << "nothing written";
    dev.hw().exec.delay_ns(2000);
    EXPECT_EQ(sim.device().counters().sq_doorbells, doorbells + 1) << "no doorbell for nothing";
    EXPECT_EQ(dev.destroy_qp(qp.get()), 0);
    dev.hw().dma.free_coherent(buf);
    EXPECT_EQ(ibcore::ib_free_cq(cq.get()), 0);
  });
}
