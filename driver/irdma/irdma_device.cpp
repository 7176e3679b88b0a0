#include "driver/irdma/irdma_device.h"

#include <cerrno>


namespace irdma {

irdma_device::irdma_device(hal::Platform& hw, const irdma_params& params)
    : hw_(hw), params_(params), cqp_(hw) {
  num_online_cpus = hw.exec.num_cpus();
}

irdma_device::~irdma_device() {
  for (irdma_qp_uk* q : qp_table_)
    if (q) free_qp(to_iwqp(q));
  for (irdma_cq* cq : cq_table_)
    if (cq) free_cq(cq);
  for (irdma_ceq& ceq : ceqs_) hw_.dma.free_coherent(ceq.ring);
  if (aeq_.ring) hw_.dma.free_coherent(aeq_.ring);
  for (hal::DmaBuffer& pd : hmc_.pd_pages) hw_.dma.free_coherent(pd);
  if (hmc_.pble) hw_.dma.free_coherent(hmc_.pble);
}

// Next-fit over the id space, as irdma allocates CQ and QP numbers.
int64_t irdma_device::alloc_id(std::vector<bool>& used, uint32_t& next, uint32_t first) {
  const uint32_t n = uint32_t(used.size());
  if (first >= n) return -ENOSPC;
  for (uint32_t i = 0; i < n - first; i++) {
    uint32_t id = next + i;
    if (id >= n) id = first + (id - n);
    if (!used[id]) {
      used[id] = true;
      next = id + 1 >= n ? first : id + 1;
      return id;
    }
  }
  return -ENOSPC;
}

}  // namespace irdma
