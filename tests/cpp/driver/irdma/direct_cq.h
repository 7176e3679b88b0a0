// A simulation with one CQ of IB_POLL_DIRECT (armed and polled only by the test, its
// completion handler counting) and a loopback RC QP pair on it: the fixture of the event and
// resize tests.
#pragma once

#include <functional>
#include <memory>

#include <gtest/gtest.h>

#include "driver/core/cq.h"
#include "model/device/irdma_device.h"
#include "model/testbench/buffered_qp.h"
#include "model/system/simulation.h"

namespace irdma_sim::testing {

using namespace irdma_sim::system;
using namespace irdma_sim::testbench;
using namespace ibcore;

inline SimConfig config(uint32_t max_cq = 64) {
  SimConfig c;
  c.device.max_cq = max_cq;
  return c;
}

struct DirectCq {
  Simulation sim;
  irdma::irdma_device& dev;
  irdma::irdma_cq* cq = nullptr;
  std::unique_ptr<BufferedQp> a, b;
  int handled = 0;
  uint64_t next_wr = 1;

  explicit DirectCq(const SimConfig& cfg = config(), int cq_entries = 64) : sim(cfg), dev(sim.driver()) {
    host([&] {
      cq = static_cast<irdma::irdma_cq*>(ib_alloc_cq(&dev, nullptr, cq_entries, 0, IB_POLL_DIRECT).get());
      cq->comp_handler = [this](ib_cq*) { handled++; };
      int err = 0;
      a.reset(BufferedQp::create(dev, cq, 8, 8, 64, err));
      b.reset(BufferedQp::create(dev, cq, 8, 8, 64, err));
      ASSERT_EQ(err, 0);
      ASSERT_EQ(dev.connect_qp(a->qp(), b->qp_num()), 0);
      ASSERT_EQ(dev.connect_qp(b->qp(), a->qp_num()), 0);
    });
  }
  void host(const std::function<void()>& job) { sim.run_on_host(job); }
  void wait_ns(uint64_t ns) { host([&] { dev.hw().exec.delay_ns(ns); }); }
  int notify(unsigned flags) {
    int ret = 0;
    host([&] { ret = ib_req_notify_cq(cq, flags); });
    return ret;
  }
  // A SEND from a to b: two CQEs, the receive's solicited when asked.
  void send(bool solicited = false) {
    host([&] {
      const ib_sge rsge = b->recv_sge(0);
      ib_recv_wr rwr;
      rwr.wr_id = next_wr++;
      rwr.sg_list = &rsge;
      rwr.num_sge = 1;
      ASSERT_EQ(dev.post_recv(b->qp(), &rwr, nullptr), 0);
      const ib_sge ssge = a->send_sge(0, 16);
      ib_send_wr swr;
      swr.wr_id = next_wr++;
      swr.sg_list = &ssge;
      swr.num_sge = 1;
      swr.send_flags = IB_SEND_SIGNALED | (solicited ? IB_SEND_SOLICITED : 0);
      ASSERT_EQ(dev.post_send(a->qp(), &swr, nullptr), 0);
    });
    wait_ns(20000);
  }
  int drain() {
    int n = 0;
    host([&] {
      ib_wc wc[16];
      for (int got; (got = ib_poll_cq(cq, 16, wc)) > 0;) n += got;
    });
    return n;
  }
  const irdma_sim::device::CqEngineCounters& cqs() { return sim.device().cq_engine().counters(); }
  const irdma_sim::device::CeqEngineCounters& ceqs() { return sim.device().ceq_engine().counters(); }
};

}  // namespace irdma_sim::testing
