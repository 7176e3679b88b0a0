// CQ allocation and completion processing (drivers/infiniband/core/cq.c; spec A.3-A.5).
#pragma once

#include "driver/core/err_ptr.h"
#include "driver/core/ib_device.h"

namespace ibcore {

ErrPtr<ib_cq> ib_alloc_cq(ib_device* dev, void* priv, int nr_cqe, unsigned comp_vector,
                          ib_poll_context poll_ctx);
// Returns 0, or -EBUSY (and a warning) for a CQ still used by QPs or by pool users.
int ib_free_cq(ib_cq* cq);
// Resizes a CQ to hold at least `cqe` completions; a shared (pool) CQ cannot be
// (-EOPNOTSUPP, spec A.4).
int ib_resize_cq(ib_cq* cq, int cqe);

// Polls up to `budget` completions (-1: until empty) in batches, calling each wc's
// wr_cqe->done. Returns the number processed.
int ib_process_cq_direct(ib_cq* cq, int budget);

// The loop behind every poll context, exposed for the softirq/workqueue pollers.
int ib_process_cq(ib_cq* cq, int budget, ib_wc* wcs, int batch);

}  // namespace ibcore
