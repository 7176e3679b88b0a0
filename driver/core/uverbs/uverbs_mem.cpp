// REG_MR and DEREG_MR (ib_uverbs_reg_mr, ib_uverbs_dereg_mr): what ib_check_mr_access
// refuses, then the driver's registration of the caller's pages; ALLOC_MW and DEALLOC_MW.
#include <cerrno>
#include <cstring>

#include "driver/core/uverbs/uverbs_file.h"

namespace ibcore::uverbs {

namespace {

constexpr uint64_t kPageMask = 4095;
constexpr int IB_ACCESS_ON_DEMAND = 1 << 6;
constexpr int kAccessMandatory = 0xff;        // IB_ACCESS_LOCAL_WRITE .. IB_ACCESS_HUGETLB
constexpr int kAccessOptional = 0x3ff00000;   // IB_ACCESS_RELAXED_ORDERING and its range: hints

int ib_check_mr_access(int flags) {
  if (flags & ~(kAccessMandatory | kAccessOptional)) return -EINVAL;
  // Remote writes and atomics land in memory the local side must be able to write.
  if ((flags & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) && !(flags & IB_ACCESS_LOCAL_WRITE))
    return -EINVAL;
  if (flags & IB_ACCESS_ON_DEMAND) return -EOPNOTSUPP;  // no on-demand paging
  return 0;
}

}  // namespace

int ib_uverbs_file::reg_mr(bundle& b) {
  ib_uverbs_reg_mr cmd;
  std::memcpy(&cmd, b.core, sizeof cmd);
  if ((cmd.start ^ cmd.hca_va) & kPageMask) return -EINVAL;
  const int access = int(cmd.access_flags);
  if (int ret = ib_check_mr_access(access)) return ret;
  auto* pd = static_cast<ib_pd*>(lookup(uobj_type::pd, cmd.pd_handle));
  if (!pd) return -EINVAL;
  int err = 0;
  ib_mr* mr = dev_.reg_user_mr(ucontext_, pd, cmd.start, cmd.length, cmd.hca_va, access & kAccessMandatory,
                               b.udata, err);
  if (!mr) return err;
  const uint32_t handle = alloc_handle(uobj_type::mr, mr);
  uobjects_[handle].pd = cmd.pd_handle;
  uobjects_[cmd.pd_handle].users++;
  const ib_uverbs_reg_mr_resp resp{handle, mr->lkey, mr->rkey};
  if (int ret = respond(b, &resp, sizeof resp)) {
    destroy_uobject(handle);
    return ret;
  }
  return 0;
}

int ib_uverbs_file::dereg_mr(bundle& b) {
  ib_uverbs_dereg_mr cmd;
  std::memcpy(&cmd, b.core, sizeof cmd);
  if (!lookup(uobj_type::mr, cmd.mr_handle)) return -EINVAL;
  return destroy_uobject(cmd.mr_handle);
}

int ib_uverbs_file::alloc_mw(bundle& b) {
  ib_uverbs_alloc_mw cmd;
  std::memcpy(&cmd, b.core, sizeof cmd);
  auto* pd = static_cast<ib_pd*>(lookup(uobj_type::pd, cmd.pd_handle));
  if (!pd || cmd.reserved[0] || cmd.reserved[1] || cmd.reserved[2]) return -EINVAL;
  int err = 0;
  ib_mw* mw = dev_.alloc_user_mw(pd, cmd.mw_type, err);
  if (!mw) return err;
  const uint32_t handle = alloc_handle(uobj_type::mw, mw);
  uobjects_[handle].pd = cmd.pd_handle;
  uobjects_[cmd.pd_handle].users++;
  const ib_uverbs_alloc_mw_resp resp{handle, mw->rkey};
  if (int ret = respond(b, &resp, sizeof resp)) {
    destroy_uobject(handle);
    return ret;
  }
  return 0;
}

int ib_uverbs_file::dealloc_mw(bundle& b) {
  ib_uverbs_dealloc_mw cmd;
  std::memcpy(&cmd, b.core, sizeof cmd);
  if (!lookup(uobj_type::mw, cmd.mw_handle)) return -EINVAL;
  return destroy_uobject(cmd.mw_handle);
}

}  // namespace ibcore::uverbs
