// The event queues (event_queues.h): the CEQs and their interrupt handler, the CEQE cleanup
// a destroyed CQ needs, and the AEQ.
#include "driver/irdma/event_queues.h"

#include <algorithm>
#include <cerrno>

#include "driver/core/cq_poll.h"
#include "driver/irdma/irdma_device.h"

namespace irdma {

using namespace ibcore;

irdma_event_queues::~irdma_event_queues() {
  for (irdma_ceq& ceq : ceqs_) rf_.sc_dev.hw.dma.free_coherent(ceq.ring);
  if (aeq_.ring) rf_.sc_dev.hw.dma.free_coherent(aeq_.ring);
}

int irdma_event_queues::create() {
  if (int ret = create_ceqs()) return ret;
  return create_aeq();
}

void irdma_event_queues::destroy() {
  destroy_aeq();
  destroy_ceqs();
}

int irdma_event_queues::create_ceqs() {
  // Arming is one-shot, but a promotion re-arms a CQ whose CEQE may not be consumed yet:
  // two slots per CQ.
  const uint32_t size = uint32_t(std::clamp<uint64_t>(2ull * rf_.sc_dev.caps.max_cq, 8, IRDMA_MAX_CEQ_SIZE));
  ceqs_.reserve(rf_.sc_dev.caps.num_ceqs);  // a handler may run while later CEQs are created
  for (uint32_t k = 0; k < rf_.sc_dev.caps.num_ceqs; k++) {
    irdma_ceq ceq;
    ceq.ce_lock = rf_.sc_dev.hw.exec.make_lock();
    ceq.irq_lock = rf_.sc_dev.hw.exec.make_lock();
    ceq.id = k;
    ceq.size = size;
    ceq.ring = rf_.sc_dev.hw.dma.alloc_coherent(uint64_t(size) * 8, 256);
    if (!ceq.ring) return -ENOMEM;
    const int ret = rf_.sc_dev.cqp.exec(IRDMA_CQP_OP_CREATE_CEQ, [&](uint64_t* wqe) {
      wqe[2] = FIELD_PREP(IRDMA_CQPSQ_CEQ_CEQSIZE, size);
      wqe[4] = ceq.ring.iova;
      return FIELD_PREP(IRDMA_CQPSQ_CEQ_CEQID, k);
    });
    if (ret) {
      rf_.sc_dev.hw.dma.free_coherent(ceq.ring);
      return ret;
    }
    ceqs_.push_back(std::move(ceq));
    const auto handler = [this, k](unsigned) {
      if (ibcore::ib_poll_workers* workers = poll_workers_.load())
        workers->hardirq([&] { irq_handler(k); });
      else
        irq_handler(k);
    };
    if (int err = rf_.sc_dev.hw.irq.request_irq(k, handler)) return err;
    rf_.sc_dev.hw.bar0.write32(IRDMA_GLINT_CEQCTL(k), uint32_t(IRDMA_GLINT_CEQCTL_CAUSE_ENA |
                                                     FIELD_PREP(IRDMA_GLINT_CEQCTL_ITR_INDX, IRDMA_IDX_NOITR) |
                                                     FIELD_PREP(IRDMA_GLINT_CEQCTL_MSIX_INDX, k)));
    rf_.sc_dev.hw.bar0.write32(IRDMA_GLINT_DYN_CTL(k), uint32_t(IRDMA_GLINT_DYN_CTL_INTENA | IRDMA_GLINT_DYN_CTL_CLEARPBA));
  }
  return 0;
}

void irdma_event_queues::destroy_ceqs() {
  for (irdma_ceq& ceq : ceqs_) {
    // The vector off and its handler gone first: what is left is then left for good.
    rf_.sc_dev.hw.bar0.write32(IRDMA_GLINT_DYN_CTL(ceq.id), 0);
    rf_.sc_dev.hw.bar0.write32(IRDMA_GLINT_CEQCTL(ceq.id), 0);
    rf_.sc_dev.hw.irq.free_irq(ceq.id);
    {
      std::lock_guard<hal::Lock> guard(*ceq.ce_lock);
      const auto* ring = static_cast<const uint64_t*>(ceq.ring.cpu);
      for (uint32_t i = 0, idx = ceq.tail, pol = ceq.polarity; i < ceq.size; i++) {
        if (FIELD_GET(IRDMA_CEQE_VALID, READ_ONCE(ring[idx])) != pol) break;
        bump(rf_.stats.ceqes_left);
        if (++idx == ceq.size) {
          idx = 0;
          pol ^= 1;
        }
      }
    }
    rf_.sc_dev.cqp.exec(IRDMA_CQP_OP_DESTROY_CEQ, [&](uint64_t* wqe) {
      wqe[2] = FIELD_PREP(IRDMA_CQPSQ_CEQ_CEQSIZE, ceq.size);
      return FIELD_PREP(IRDMA_CQPSQ_CEQ_CEQID, ceq.id);
    });
    rf_.sc_dev.hw.dma.free_coherent(ceq.ring);
  }
  ceqs_.clear();
}

// The CEQ's interrupt. Linux defers the work to a tasklet, which never runs twice at once;
// here irq_lock keeps the watchdog's runs and the interrupt's apart.
void irdma_event_queues::irq_handler(uint32_t ceq_id) {
  irdma_ceq& ceq = ceqs_[ceq_id];
  std::lock_guard<hal::Lock> guard(*ceq.irq_lock);
  bump(rf_.stats.interrupts);
  ceq.watch.handler_runs++;
  process_ceq(ceq_id);
}

// irdma_process_ceq: every CEQE is acknowledged, its CQ disarmed and its handler called;
// CEQEs of no CQ (cleaned up, context 0) are skipped. Then the vector is enabled again.
// The ring is read under ce_lock, the handler called with the CQ referenced.
void irdma_event_queues::process_ceq(uint32_t ceq_id) {
  irdma_ceq& ceq = ceqs_[ceq_id];
  auto* ring = static_cast<uint64_t*>(ceq.ring.cpu);
  for (;;) {
    irdma_cq* cq;
    {
      std::lock_guard<hal::Lock> guard(*ceq.ce_lock);
      const uint64_t ceqe = READ_ONCE(ring[ceq.tail]);
      if (FIELD_GET(IRDMA_CEQE_VALID, ceqe) != ceq.polarity) break;
      hal::dma_rmb();
      if (++ceq.tail == ceq.size) {
        ceq.tail = 0;
        ceq.polarity ^= 1;
      }
      bump(rf_.stats.ceqes);
      cq = rf_.irdma_cq_add_ref(ceqe << 1);
      if (!cq) {
        bump(rf_.stats.stale_ceqes);
        continue;
      }
      rf_.sc_dev.hw.bar0.write32(IRDMA_CQACK, cq->cq_num);
    }
    cq->armed.store(false);
    if (cq->comp_handler) {
      bump(rf_.stats.comp_events);
      cq->comp_handler(cq);
    }
    irdma_pci_f::irdma_cq_rem_ref(cq);
  }
  rf_.sc_dev.hw.bar0.write32(IRDMA_GLINT_DYN_CTL(ceq_id),
                   uint32_t(IRDMA_GLINT_DYN_CTL_INTENA | IRDMA_GLINT_DYN_CTL_CLEARPBA |
                            FIELD_PREP(IRDMA_GLINT_DYN_CTL_INTERVAL, rf_.params.ceq_itr_us >> 1)));
}

// irdma_sc_cleanup_ceqes: the destroyed CQ's unconsumed CEQEs keep only their valid bit,
// so the handler skips them.
void irdma_event_queues::cleanup_ceqes(const irdma_cq* cq) {
  if (cq->ceq_id >= ceqs_.size()) return;
  irdma_ceq& ceq = ceqs_[cq->ceq_id];
  std::lock_guard<hal::Lock> guard(*ceq.ce_lock);
  auto* ring = static_cast<uint64_t*>(ceq.ring.cpu);
  uint32_t idx = ceq.tail;
  uint8_t polarity = ceq.polarity;
  for (uint32_t seen = 0; seen < ceq.size; seen++) {
    const uint64_t ceqe = READ_ONCE(ring[idx]);
    if (FIELD_GET(IRDMA_CEQE_VALID, ceqe) != polarity) break;
    if ((ceqe << 1) == cq->ctx) WRITE_ONCE(ring[idx], ceqe & IRDMA_CEQE_VALID);
    if (++idx == ceq.size) {
      idx = 0;
      polarity ^= 1;
    }
  }
}

// The AEQ: as many entries as CQs and QPs could each report once, on the vector after
// the CEQs'. Its CQP commands follow CEQ_CREATE's layout (entries in qword2, the ring in
// qword4): this model's choice, the spec has no AEQ WQE.
int irdma_event_queues::create_aeq() {
  aeq_.size = uint32_t(std::clamp<uint64_t>(uint64_t(rf_.sc_dev.caps.max_cq) + rf_.sc_dev.caps.max_qp, 16, IRDMA_MAX_AEQ_SIZE));
  aeq_.vector = rf_.sc_dev.caps.num_ceqs;
  aeq_.irq_lock = rf_.sc_dev.hw.exec.make_lock();
  aeq_.ring = rf_.sc_dev.hw.dma.alloc_coherent(uint64_t(aeq_.size) * 16, 256);
  if (!aeq_.ring) return -ENOMEM;
  if (int ret = rf_.sc_dev.cqp.exec(IRDMA_CQP_OP_CREATE_AEQ, [&](uint64_t* wqe) {
        wqe[2] = aeq_.size;
        wqe[4] = aeq_.ring.iova;
        return uint64_t(0);
      })) {
    rf_.sc_dev.hw.dma.free_coherent(aeq_.ring);
    aeq_.ring = {};
    return ret;
  }
  if (int err = rf_.sc_dev.hw.irq.request_irq(aeq_.vector, [this](unsigned) { aeq_handler(); })) return err;
  rf_.sc_dev.hw.bar0.write32(IRDMA_PFINT_AEQCTL, uint32_t(IRDMA_GLINT_CEQCTL_CAUSE_ENA |
                                                FIELD_PREP(IRDMA_GLINT_CEQCTL_ITR_INDX, IRDMA_IDX_NOITR) |
                                                FIELD_PREP(IRDMA_GLINT_CEQCTL_MSIX_INDX, aeq_.vector)));
  rf_.sc_dev.hw.bar0.write32(IRDMA_GLINT_DYN_CTL(aeq_.vector),
                   uint32_t(IRDMA_GLINT_DYN_CTL_INTENA | IRDMA_GLINT_DYN_CTL_CLEARPBA));
  return 0;
}

void irdma_event_queues::destroy_aeq() {
  if (!aeq_.ring) return;
  rf_.sc_dev.hw.bar0.write32(IRDMA_GLINT_DYN_CTL(aeq_.vector), 0);
  rf_.sc_dev.hw.bar0.write32(IRDMA_PFINT_AEQCTL, 0);
  rf_.sc_dev.hw.irq.free_irq(aeq_.vector);
  rf_.sc_dev.cqp.exec(IRDMA_CQP_OP_DESTROY_AEQ, [&](uint64_t*) { return uint64_t(0); });
  rf_.sc_dev.hw.dma.free_coherent(aeq_.ring);
  aeq_.ring = {};
}

void irdma_event_queues::aeq_handler() {
  std::lock_guard<hal::Lock> guard(*aeq_.irq_lock);
  bump(rf_.stats.interrupts);
  aeq_.watch.handler_runs++;
  process_aeq();
}

// irdma_process_aeq, as far as CQs and QPs go: CQ_OPERATION_ERROR (the device's overflow)
// and a CQ's catastrophic error become IB_EVENT_CQ_ERR on the CQ's event handler; a QP's
// error, which the device reports once as it moves the QP to error and flushes it, the QP
// event its AE stands for. Consumed entries go back through AEQALLOC before the vector is
// enabled again.
void irdma_event_queues::process_aeq() {
  auto* ring = static_cast<uint64_t*>(aeq_.ring.cpu);
  uint32_t consumed = 0;
  for (;;) {
    const uint64_t* aeqe = ring + 2ull * aeq_.tail;
    const uint64_t info = READ_ONCE(aeqe[1]);
    if (FIELD_GET(IRDMA_AEQE_VALID, info) != aeq_.polarity) break;
    hal::dma_rmb();
    const uint64_t ctx = READ_ONCE(aeqe[0]);
    if (++aeq_.tail == aeq_.size) {
      aeq_.tail = 0;
      aeq_.polarity ^= 1;
    }
    consumed++;
    const auto code = uint16_t(FIELD_GET(IRDMA_AEQE_AECODE, info));
    const auto src = uint8_t(FIELD_GET(IRDMA_AEQE_AESRC, info));
    if (irdma_ae_source_is_qp(src)) {
      qp_event(uint32_t(FIELD_GET(IRDMA_AEQE_QPCQID_LOW, info) |
                        FIELD_GET(IRDMA_AEQE_QPCQID_HI, info) << IRDMA_AEQE_QPCQID_LOW_BITS),
               ctx, code);
      continue;
    }
    if (!irdma_ae_source_is_cq(src) ||
        (code != IRDMA_AE_CQ_OPERATION_ERROR && code != IRDMA_AE_LCE_CQ_CATASTROPHIC))
      continue;
    irdma_cq* cq = rf_.irdma_cq_add_ref(ctx << 1);
    if (!cq) {
      bump(rf_.stats.stale_cq_errors);
      continue;
    }
    bump(rf_.stats.cq_errors);
    if (cq->event_handler) cq->event_handler({&rf_.iwdev, cq, IB_EVENT_CQ_ERR});
    irdma_pci_f::irdma_cq_rem_ref(cq);
  }
  bump(rf_.stats.aeqes, consumed);
  if (consumed) rf_.sc_dev.hw.bar0.write32(IRDMA_AEQALLOC, consumed);
  rf_.sc_dev.hw.bar0.write32(IRDMA_GLINT_DYN_CTL(aeq_.vector),
                   uint32_t(IRDMA_GLINT_DYN_CTL_INTENA | IRDMA_GLINT_DYN_CTL_CLEARPBA));
}

// irdma_ib_qp_event: the QP, if it still lives, hears the event its AE stands for.
void irdma_event_queues::qp_event(uint32_t qp_num, uint64_t ctx, uint16_t code) {
  irdma_qp* qp = rf_.irdma_qp_add_ref(qp_num, ctx);
  if (!qp) {
    bump(rf_.stats.stale_qp_errors);
    return;
  }
  bump(rf_.stats.qp_errors);
  static constexpr ib_event_type kEvent[] = {IB_EVENT_QP_FATAL, IB_EVENT_QP_ACCESS_ERR, IB_EVENT_QP_REQ_ERR};
  ib_event e{&rf_.iwdev, nullptr, kEvent[irdma_ae_to_qp_err_code(code).event_type]};
  e.qp = qp;
  if (qp->event_handler) qp->event_handler(e);
  irdma_pci_f::irdma_qp_rem_ref(qp);
}

}  // namespace irdma
