#include "driver/irdma/irdma_device.h"

namespace irdma {

irdma_device::irdma_device(hal::Platform& hw, const irdma_params& params)
    : rf_(hw, params, *this), flush_wq_(hw.exec, [this](irdma_qp* qp) { return run_flush_work(qp); }) {
  num_online_cpus = hw.exec.num_cpus();
  rf_.reset.recover = [this] { recover_from_reset(); };
}

// Only rsrc_lock is taken, which nothing holds across a wait: a simulation may have ended
// with a driver thread suspended holding a CQ, QP or CQP lock.
irdma_device::~irdma_device() {
  for (irdma_qp_uk* q : rf_.qp_table)
    if (q) release_qp(to_iwqp(q));
  for (irdma_cq* cq : rf_.cq_table)
    if (cq) free_cq(cq);
}

}  // namespace irdma
