#include "driver/core/cq.h"

#include "driver/core/cq_poll.h"

#include <algorithm>
#include <cerrno>

namespace ibcore {

ErrPtr<ib_cq> ib_alloc_cq(ib_device* dev, void* priv, int nr_cqe, unsigned comp_vector,
                          ib_poll_context poll_ctx) {
  if (poll_ctx < IB_POLL_SOFTIRQ || poll_ctx > IB_POLL_DIRECT)
    return ErrPtr<ib_cq>::error(-EINVAL);
  if (nr_cqe < 1) return ErrPtr<ib_cq>::error(-EINVAL);
  ib_cq_init_attr attr;
  attr.cqe = unsigned(nr_cqe);
  attr.comp_vector = comp_vector;
  int err = 0;
  ib_cq* cq = dev->create_cq(attr, err);
  if (!cq) return ErrPtr<ib_cq>::error(err ? err : -ENOMEM);
  cq->device = dev;
  cq->cq_context = priv;
  cq->poll_ctx = poll_ctx;
  cq->comp_vector = comp_vector;
  if (poll_ctx == IB_POLL_DIRECT) {
    cq->comp_handler = [dev](ib_cq*) { dev->warnings.warn("got unsolicited completion for CQ"); };
  } else {
    cq->comp_handler = [](ib_cq* c) {
      if (c->device->poll_workers) c->device->poll_workers->schedule(c);
    };
    // Armed now, so the first completion raises an event.
    ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
  }
  return cq;
}

int ib_free_cq(ib_cq* cq) {
  if (cq->usecnt != 0) {
    cq->device->warnings.warn("ib_free_cq: CQ still used by QPs");
    return -EBUSY;
  }
  if (cq->cqe_used != 0) {
    cq->device->warnings.warn("ib_free_cq: pool CQ still has users");
    return -EBUSY;
  }
  ib_poll_workers* workers = cq->device->poll_workers;
  if (workers) workers->cancel(cq);
  const int ret = cq->device->destroy_cq(cq);
  if (ret) {
    cq->device->warnings.warn("ib_free_cq: driver destroy_cq failed");
    // The CQ lives on: polled again at once, for any event that came while it was going.
    if (workers && cq->poll_ctx != IB_POLL_DIRECT) {
      workers->enable(cq);
      workers->schedule(cq);
    }
  }
  return ret;
}

int ib_resize_cq(ib_cq* cq, int cqe) {
  if (cq->shared) return -EOPNOTSUPP;
  return cq->device->resize_cq(cq, cqe);
}

int ib_process_cq(ib_cq* cq, int budget, ib_wc* wcs, int batch) {
  int completed = 0;
  for (;;) {
    // Unsigned min: budget -1 means unbounded.
    const int want = int(std::min(unsigned(batch), unsigned(budget) - unsigned(completed)));
    const int n = ib_poll_cq(cq, want, wcs);
    if (n <= 0) break;
    for (int i = 0; i < n; i++) {
      ib_wc* wc = &wcs[i];
      if (wc->wr_cqe)
        wc->wr_cqe->done(cq, wc);
      else if (wc->status == IB_WC_SUCCESS)
        cq->device->warnings.warn("successful completion without a wr_cqe");
    }
    completed += n;
    if (n != batch || (budget != -1 && completed >= budget)) break;
  }
  return completed;
}

int ib_process_cq_direct(ib_cq* cq, int budget) {
  ib_wc wcs[IB_POLL_BATCH_DIRECT]{};  // fields a completion leaves alone read as 0
  return ib_process_cq(cq, budget, wcs, IB_POLL_BATCH_DIRECT);
}

}  // namespace ibcore
