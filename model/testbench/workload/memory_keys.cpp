// Memory keys: the region (and window) a QP's RDMA requests name, and forgetting the
// region once it is invalidated.

#include <algorithm>

#include "model/testbench/workload/bookkeeping.h"

namespace irdma_sim::testbench {

using namespace ibcore;

// A QP whose ops register memory gets a region spanning its peer's window (and a window
// object when it binds one); the kernel ULP's ib_alloc_mr and ib_map_mr_sg.
bool Workload::make_keys(Qp& q) {
  const auto uses = [&](TrafficOp op) { return std::find(q.ops->begin(), q.ops->end(), op) != q.ops->end(); };
  if (!uses(TrafficOp::reg_mr)) return true;
  const BufferedQp& peer = *q.peer->bq;
  const uint64_t bytes = uint64_t(peer.window_slots()) * peer.slot_bytes();
  auto mr = dev_.alloc_mr(uint32_t((bytes + 4095) / 4096 + 1));
  int err = mr.is_err() ? mr.err() : dev_.map_mr_sg(mr.get(), peer.window_addr(0), bytes);
  if (!mr.is_err()) q.mr = mr.get();
  if (err >= 0 && uses(TrafficOp::bind_mw)) {
    auto mw = dev_.alloc_mw();
    if (mw.is_err()) err = mw.err();
    else q.mw = mw.get();
  }
  if (err < 0 && !out_of(err, "config.device.max_stags", sc_.config.device.max_stags, "allocating memory keys"))
    sb_.record("setup", false, "allocating memory keys failed, errno " + std::to_string(-err));
  return err >= 0;
}

void Workload::forget_region(Qp& q) {
  q.mr_registered = false;
  q.rkey = 0;
}

}  // namespace irdma_sim::testbench
