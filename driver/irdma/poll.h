// The poll path below the CQ verb (poll.cpp), for the verb itself, the benches and the
// tests that drive a ring directly.
#pragma once

#include "driver/core/ib_verbs.h"
#include "driver/irdma/uk.h"

namespace irdma {

// Up to `num_entries` completions from one ring, skipping CQEs of destroyed QPs; returns
// how many, or a negative errno.
int irdma_poll_ring(irdma_cq_uk* ukcq, int num_entries, ibcore::ib_wc* wc);
// One CQE into one ib_wc: irdma_poll_one, and the mapping of spec G.6.
int irdma_poll_one(irdma_cq_uk* ukcq, irdma_cq_poll_info* info, ibcore::ib_wc* wc);
void irdma_process_cqe(ibcore::ib_wc* wc, const irdma_cq_poll_info& info);

}  // namespace irdma
