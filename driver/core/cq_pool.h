// The shared CQ pool (ib_cq_pool_get / ib_cq_pool_put; spec A.6-A.9).
#pragma once

#include "driver/core/err_ptr.h"
#include "driver/core/ib_device.h"

namespace ibcore {

// Takes room for `nr_cqe` completions on a pool CQ of `poll_ctx` serving `comp_vector_hint`
// (negative: any vector), growing the pool by one CQ per vector when nothing fits.
// Errors: -EINVAL for IB_POLL_DIRECT or an unknown context, and for a request no pool CQ
// could ever hold (where the kernel would grow without end); driver errors from growth.
ErrPtr<ib_cq> ib_cq_pool_get(ib_device* dev, unsigned nr_cqe, int comp_vector_hint,
                             ib_poll_context poll_ctx);

// Gives back room taken by ib_cq_pool_get. Returns -EINVAL (and warns, changing nothing)
// when more is returned than is taken.
int ib_cq_pool_put(ib_cq* cq, unsigned nr_cqe);

// Frees every pool CQ at device teardown. CQs still in use are warned about and kept;
// returns how many were kept.
int ib_cq_pool_cleanup(ib_device* dev);

}  // namespace ibcore
