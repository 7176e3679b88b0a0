// The provider's direct verbs, as rdma-core's mlx5dv_* are: what a caller may learn of an
// irdma object beyond ib-core's view, without reaching into the driver's structs.
#pragma once

#include <cstdint>

#include "driver/core/ib_verbs.h"

namespace irdma {

struct irdmadv_cq {
  uint32_t cq_num = 0;          // the device's CQ id
  uint64_t corrupt_cqes = 0;    // skipped by the poll path: unknown QP or WQE index
  uint64_t destroyed_qp_cqes = 0;  // dropped by the poll path: their QP was being destroyed
  uint64_t ext_half_waits = 0;  // polls that found a CQE's main half valid, its extended half not yet
  uint64_t resizes = 0;
  uint64_t retired_polled = 0;  // completions found in rings a resize retired
};

// Fills `out` for a CQ of an irdma device; -EINVAL for any other.
int irdmadv_query_cq(const ibcore::ib_cq* cq, irdmadv_cq* out);

}  // namespace irdma
