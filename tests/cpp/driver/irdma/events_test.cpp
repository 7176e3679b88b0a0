// Completion events end to end (spec D.5, E, H 20-27): arming, one CEQE per arm, solicited
// arms, sequence numbers, CEQ wrap, masked vectors, the CQE that lands between the last
// poll and the re-arm, and CEQEs of a destroyed CQ; and the asynchronous events of CQs and QPs. The CQ is a DIRECT one the test arms
// itself, with a handler that counts.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <vector>

#include "tests/cpp/driver/irdma/direct_cq.h"

namespace {

using namespace irdma_sim::system;
using namespace irdma_sim::testbench;
using namespace irdma_sim::testing;
using namespace ibcore;

using Events = DirectCq;

TEST(Events, OneEventPerArm) {
  Events e;
  EXPECT_EQ(e.notify(IB_CQ_NEXT_COMP), 0);
  for (int i = 0; i < 3; i++) e.send();
  EXPECT_EQ(e.handled, 1) << "six CQEs, one arm";
  EXPECT_EQ(e.ceqs().ceqes, 1u);
  EXPECT_EQ(e.ceqs().cqacks, 1u);
  EXPECT_FALSE(e.cq->armed) << "the CEQ handler disarmed it";
  EXPECT_EQ(e.drain(), 6);
  EXPECT_EQ(e.notify(IB_CQ_NEXT_COMP), 0);
  e.send();
  EXPECT_EQ(e.handled, 2);
  EXPECT_EQ(e.dev.event_counters().interrupts, 2u);
}

TEST(Events, NotifyWhileArmedRingsNothing) {
  Events e;
  EXPECT_EQ(e.notify(IB_CQ_NEXT_COMP), 0);
  const uint64_t arms = e.sim.device().counters().cq_arms;
  EXPECT_EQ(e.notify(IB_CQ_NEXT_COMP), 0);
  EXPECT_EQ(e.sim.device().counters().cq_arms, arms) << "already armed: no doorbell (H 20)";
}

TEST(Events, SolicitedArmWaitsForASolicitedCompletion) {
  Events e;
  EXPECT_EQ(e.notify(IB_CQ_SOLICITED), 0);
  e.send(false);
  EXPECT_EQ(e.handled, 0) << "two unsolicited CQEs";
  e.send(true);
  EXPECT_EQ(e.handled, 1) << "the solicited receive";
}

TEST(Events, SolicitedWithReportMissedEventsArmsForAnything) {
  Events e;
  EXPECT_EQ(e.notify(IB_CQ_SOLICITED | IB_CQ_REPORT_MISSED_EVENTS), 0);  // H 22
  e.send(false);
  EXPECT_EQ(e.handled, 1);
}

TEST(Events, PromotionFromSolicitedToNextCompletion) {
  Events e;
  EXPECT_EQ(e.notify(IB_CQ_SOLICITED), 0);
  EXPECT_EQ(e.notify(IB_CQ_NEXT_COMP), 0);  // H 21: a new arm, for anything
  e.wait_ns(5000);
  // The device read the second arm for the first doorbell: the second doorbell is stale.
  EXPECT_EQ(e.cqs().arms, 1u);
  EXPECT_EQ(e.cqs().stale_arms, 1u);
  e.send(false);
  EXPECT_EQ(e.handled, 1);
}

TEST(Events, ArmSequenceNumbersWrapAndStaleArmsAreIgnored) {
  Events e;
  e.host([&] {
    for (int i = 0; i < 5; i++) {
      irdma::irdma_uk_cq_request_notification(&e.cq->sc_cq, irdma::IRDMA_CQ_COMPL_EVENT);
      e.dev.hw().exec.delay_ns(2000);  // each doorbell read before the next arm
    }
  });
  const uint64_t shadow = static_cast<const uint64_t*>(e.cq->shadow.cpu)[4];
  EXPECT_EQ((shadow >> 16) & 3, 1u) << "5 arms: 1, 2, 3, 0, 1 (H 24)";
  EXPECT_EQ(e.cqs().arms, 5u);
  EXPECT_EQ(e.cqs().stale_arms, 0u);
  e.host([&] { e.dev.hw().bar0.write32(irdma::IRDMA_CQARM, e.cq->cq_num); });  // the same arm again
  e.wait_ns(5000);
  EXPECT_EQ(e.cqs().stale_arms, 1u);
}

TEST(Events, CeqWrapsWithItsPolarity) {
  Events e(config(8));  // 8 CQs: a CEQ of 16 entries
  for (int i = 0; i < 20; i++) {
    ASSERT_EQ(e.notify(IB_CQ_NEXT_COMP), 0);
    e.send();
    ASSERT_EQ(e.drain(), 2);
  }
  EXPECT_EQ(e.handled, 20);
  EXPECT_EQ(e.dev.event_counters().ceqes, 20u);
  EXPECT_EQ(e.dev.event_counters().stale_ceqes, 0u);
}

TEST(Events, AMaskedVectorFiresWhenEnabledWithAnEventPending) {
  Events e;
  e.host([&] { e.dev.hw().bar0.write32(irdma::IRDMA_GLINT_DYN_CTL(0), 0); });
  EXPECT_EQ(e.notify(IB_CQ_NEXT_COMP), 0);
  e.send();
  EXPECT_EQ(e.handled, 0);
  EXPECT_EQ(e.sim.device().vectors().counters().events_while_masked, 1u);
  e.host([&] {
    e.dev.hw().bar0.write32(irdma::IRDMA_GLINT_DYN_CTL(0),
                            uint32_t(irdma::IRDMA_GLINT_DYN_CTL_INTENA | irdma::IRDMA_GLINT_DYN_CTL_CLEARPBA));
  });
  e.wait_ns(5000);
  EXPECT_EQ(e.handled, 1) << "the unacknowledged CEQE raises its cause again";
}

// H 23: a CQE lands after the consumer's last poll and before its re-arm.
TEST(Events, ACqeBetweenTheLastPollAndTheReArmIsNotLost) {
  Events e;
  EXPECT_EQ(e.drain(), 0);
  e.send();  // not armed: no event
  EXPECT_EQ(e.handled, 0);
  EXPECT_EQ(e.notify(IB_CQ_NEXT_COMP | IB_CQ_REPORT_MISSED_EVENTS), 1) << "the consumer must poll again";
  e.wait_ns(5000);
  EXPECT_EQ(e.handled, 1) << "and the device fires for the unconsumed CQEs it was armed over";
  EXPECT_EQ(e.drain(), 2);
}

// With moderation (the driver's ceq_itr, GLINT_DYN_CTL INTERVAL), a vector fires no more
// often than its interval: the second event waits.
TEST(Events, ModerationSpacesInterrupts) {
  SimConfig cfg = config();
  cfg.device.ceq_itr_us = 40;
  Events e(cfg);
  std::vector<uint64_t> at;
  e.cq->comp_handler = [&](ib_cq*) { at.push_back(e.dev.hw().exec.now_ns()); };
  EXPECT_EQ(e.notify(IB_CQ_NEXT_COMP), 0);
  e.send();
  EXPECT_EQ(e.drain(), 2);
  EXPECT_EQ(e.notify(IB_CQ_NEXT_COMP), 0);
  e.send();
  e.wait_ns(50000);
  ASSERT_EQ(at.size(), 2u);
  EXPECT_GE(at[1] - at[0], 40000u);
  EXPECT_EQ(e.sim.device().vectors().counters().moderated, 1u);
}

// H 18: a CQ nobody polls fills. The device keeps one slot free, writes nothing over what
// the driver has not consumed, raises CQ_OPERATION_ERROR once, and the driver turns it into
// IB_EVENT_CQ_ERR; the CQ stays in error.
TEST(Events, AFullCqRaisesCqErrAndOverwritesNothing) {
  Events e(config(), 2);  // a ring of (2 + 1) x 2 = 6 slots: five CQEs fit
  std::vector<ib_event_type> got;
  e.cq->event_handler = [&](const ib_event& ev) {
    got.push_back(ev.event);
    EXPECT_EQ(ev.cq, e.cq);
  };
  for (int i = 0; i < 4; i++) e.send();  // eight completions
  EXPECT_EQ(got, std::vector<ib_event_type>{IB_EVENT_CQ_ERR}) << "once";
  EXPECT_EQ(e.cqs().overflows, 1u);
  EXPECT_EQ(e.cqs().cqes_overflowed, 3u);
  EXPECT_EQ(e.dev.event_counters().aeqes, 1u);
  e.host([&] {
    ib_wc wc[16];
    ASSERT_EQ(ib_poll_cq(e.cq, 16, wc), 5);
    for (int i = 0; i < 5; i++) {
      EXPECT_EQ(wc[i].wr_id, uint64_t(i + 1)) << "receive, send, receive, ...: in order, intact";
      EXPECT_EQ(wc[i].status, IB_WC_SUCCESS);
    }
  });
  e.send();
  EXPECT_EQ(e.cqs().cqes_overflowed, 5u) << "a CQ in error takes nothing more";
  EXPECT_EQ(e.drain(), 0);
  EXPECT_EQ(got.size(), 1u);
}

// H 26: a CEQE still queued for a CQ being destroyed is neutralised and skipped.
TEST(Events, ACeqeOfADestroyedCqIsSkipped) {
  Events e;
  e.host([&] { e.dev.hw().bar0.write32(irdma::IRDMA_GLINT_DYN_CTL(0), 0); });
  EXPECT_EQ(e.notify(IB_CQ_NEXT_COMP), 0);
  e.send();
  EXPECT_EQ(e.ceqs().ceqes, 1u);
  EXPECT_EQ(e.drain(), 2);
  e.host([&] {
    ASSERT_EQ(e.a->destroy(), 0);
    ASSERT_EQ(e.b->destroy(), 0);
    ASSERT_EQ(ib_free_cq(e.cq), 0);
    e.dev.hw().bar0.write32(irdma::IRDMA_GLINT_DYN_CTL(0), uint32_t(irdma::IRDMA_GLINT_DYN_CTL_INTENA));
    e.dev.hw().exec.delay_ns(5000);
  });
  e.a.reset();
  e.b.reset();
  EXPECT_EQ(e.handled, 0);
  EXPECT_EQ(e.dev.event_counters().stale_ceqes, 1u);
}

// A CQ error the device raised for a CQ freed before the driver read it (its interrupt ran
// late, as on OS threads it may): dropped, as irdma drops it, and counted apart, so the
// run's check of errors raised against errors read still holds.
TEST(Events, ACqErrorReadAfterItsCqWasFreedIsDroppedAndCounted) {
  Events e(config(), 2);
  int handled = 0;
  e.cq->event_handler = [&](const ib_event&) { handled++; };
  const uint32_t aeq_vector = e.dev.caps().num_ceqs;  // the AEQ's follows the CEQs'
  e.host([&] { e.dev.hw().bar0.write32(irdma::IRDMA_GLINT_DYN_CTL(aeq_vector), 0); });
  for (int i = 0; i < 4; i++) e.send();
  ASSERT_EQ(e.cqs().overflows, 1u);
  EXPECT_EQ(e.dev.event_counters().aeqes, 0u) << "the AEQ's interrupt is held off";
  e.host([&] {
    ASSERT_EQ(e.a->destroy(), 0);
    ASSERT_EQ(e.b->destroy(), 0);
    ASSERT_EQ(ib_free_cq(e.cq), 0);
    e.dev.hw().bar0.write32(irdma::IRDMA_GLINT_DYN_CTL(aeq_vector), uint32_t(irdma::IRDMA_GLINT_DYN_CTL_INTENA));
    e.dev.hw().exec.delay_ns(5000);
  });
  e.a.reset();
  e.b.reset();
  EXPECT_EQ(handled, 0);
  const irdma::irdma_event_counters ev = e.dev.event_counters();
  EXPECT_EQ(ev.aeqes, 1u);
  EXPECT_EQ(ev.cq_errors, 0u);
  EXPECT_EQ(ev.stale_cq_errors, 1u);
}

// A SEND from a to b with its fragments changed by `edit_send` and `edit_recv`; then the
// events each QP heard.
struct QpEvents {
  std::vector<ib_event_type> a, b;
};
QpEvents failed_send(Events& e, const std::function<void(ib_sge&)>& edit_send,
                     const std::function<void(ib_sge&)>& edit_recv) {
  QpEvents got;
  e.a->qp()->event_handler = [&](const ib_event& ev) {
    EXPECT_EQ(ev.qp, e.a->qp());
    got.a.push_back(ev.event);
  };
  e.b->qp()->event_handler = [&](const ib_event& ev) {
    EXPECT_EQ(ev.qp, e.b->qp());
    got.b.push_back(ev.event);
  };
  e.host([&] {
    ib_sge rsge = e.b->recv_sge(0);
    edit_recv(rsge);
    ib_recv_wr rwr;
    rwr.sg_list = &rsge;
    rwr.num_sge = 1;
    ASSERT_EQ(e.dev.post_recv(e.b->qp(), &rwr, nullptr), 0);
    ib_sge ssge = e.a->send_sge(0, 16);
    edit_send(ssge);
    ib_send_wr swr;
    swr.sg_list = &ssge;
    swr.num_sge = 1;
    swr.send_flags = IB_SEND_SIGNALED;
    ASSERT_EQ(e.dev.post_send(e.a->qp(), &swr, nullptr), 0);
  });
  e.wait_ns(20000);
  e.a->qp()->event_handler = nullptr;
  e.b->qp()->event_handler = nullptr;
  return got;
}

const auto kUnchanged = [](ib_sge&) {};

// A QP whose work fails hears, once, the event its error stands for (irdma_set_flush_fields,
// spec G.5): a key it may not use is an access error ...
TEST(Events, AKeyTheQpMayNotUseIsAnAccessError) {
  Events e;
  const QpEvents got = failed_send(e, [](ib_sge& s) { s.lkey = 0x00abcd00; }, kUnchanged);
  EXPECT_EQ(got.a, std::vector<ib_event_type>{IB_EVENT_QP_ACCESS_ERR});
  EXPECT_TRUE(got.b.empty()) << "the peer saw nothing of it";
  EXPECT_EQ(e.dev.event_counters().qp_errors, 1u);
}

// ... and the requester of a SEND its peer had no room for is told of an invalid request,
// while the responder's own error is fatal.
TEST(Events, ASendTooLongForTheReceiveIsARequestErrorAndTheResponderFatal) {
  Events e;
  const QpEvents got = failed_send(e, kUnchanged, [](ib_sge& r) { r.length = 8; });
  EXPECT_EQ(got.a, std::vector<ib_event_type>{IB_EVENT_QP_REQ_ERR});
  EXPECT_EQ(got.b, std::vector<ib_event_type>{IB_EVENT_QP_FATAL});
  EXPECT_EQ(e.dev.event_counters().qp_errors, 2u);
}

// A buffer the host's memory refuses is no key's fault: the QP's own catastrophe, though
// its WQE completes with a local protection error.
TEST(Events, ASendFromMemoryTheHostRefusesIsFatalToItsQp) {
  Events e;
  const QpEvents got = failed_send(e, [](ib_sge& s) { s.lkey = 0; s.addr = 1ull << 46; }, kUnchanged);
  EXPECT_EQ(got.a, std::vector<ib_event_type>{IB_EVENT_QP_FATAL});
  EXPECT_TRUE(got.b.empty()) << "the peer saw nothing of it";
}

// A QP moved to error by the driver (FLUSH_WQES) hears nothing: no work of its failed.
TEST(Events, AFlushTheDriverAskedForRaisesNoQpEvent) {
  Events e;
  int heard = 0;
  e.a->qp()->event_handler = [&](const ib_event&) { heard++; };
  e.host([&] { ASSERT_EQ(e.dev.flush_qp(e.a->qp()), 0); });
  e.wait_ns(20000);
  EXPECT_EQ(heard, 0);
  EXPECT_EQ(e.dev.event_counters().aeqes, 0u);
}

// As for CQs: an error read after its QP was destroyed reaches no one and is counted apart.
TEST(Events, AQpErrorReadAfterItsQpWasDestroyedIsDroppedAndCounted) {
  Events e;
  const uint32_t aeq_vector = e.dev.caps().num_ceqs;
  e.host([&] { e.dev.hw().bar0.write32(irdma::IRDMA_GLINT_DYN_CTL(aeq_vector), 0); });
  failed_send(e, [](ib_sge& s) { s.lkey = 0x00abcd00; }, kUnchanged);
  EXPECT_EQ(e.dev.event_counters().aeqes, 0u) << "the AEQ's interrupt is held off";
  e.host([&] {
    ASSERT_EQ(e.a->destroy(), 0);
    e.dev.hw().bar0.write32(irdma::IRDMA_GLINT_DYN_CTL(aeq_vector), uint32_t(irdma::IRDMA_GLINT_DYN_CTL_INTENA));
    e.dev.hw().exec.delay_ns(5000);
  });
  e.a.reset();
  const irdma::irdma_event_counters ev = e.dev.event_counters();
  EXPECT_EQ(ev.aeqes, 1u);
  EXPECT_EQ(ev.qp_errors, 0u);
  EXPECT_EQ(ev.stale_qp_errors, 1u);
}

}  // namespace
