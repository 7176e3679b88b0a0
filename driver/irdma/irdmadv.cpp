#include "driver/irdma/irdmadv.h"

#include <cerrno>
#include <mutex>

#include "driver/irdma/irdma_device.h"

namespace irdma {

int irdmadv_query_cq(const ibcore::ib_cq* ibcq, irdmadv_cq* out) {
  const auto* cq = ibcq ? dynamic_cast<const irdma_cq*>(ibcq) : nullptr;
  if (!cq || !out) return -EINVAL;
  out->cq_num = cq->cq_num;
  const std::lock_guard<hal::Lock> held(*cq->lock);
  out->corrupt_cqes = cq->sc_cq.corrupt_cqes;
  out->destroyed_qp_cqes = cq->sc_cq.destroyed_qp_cqes;
  out->ext_half_waits = cq->sc_cq.ext_half_waits;
  out->resizes = cq->resizes;
  out->retired_polled = cq->retired_polled;
  return 0;
}

}  // namespace irdma
