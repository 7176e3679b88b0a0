// CREATE_QP, MODIFY_QP (and its extended form), QUERY_QP and DESTROY_QP: the core's
// checks and the translation between the ABI's layouts and ib_qp_attr; the QP's
// asynchronous events go to the context's async file.
#include <cerrno>
#include <cstring>

#include "driver/core/uverbs/uverbs_file.h"

namespace ibcore::uverbs {

namespace {

constexpr uint32_t kPlainAttrMask = (IB_QP_DEST_QPN << 1) - 1;  // what MODIFY_QP can carry

void copy_dest(rdma_ah_attr& ah, const ib_uverbs_qp_dest& d) {
  std::memcpy(ah.dgid, d.dgid, sizeof ah.dgid);
  ah.flow_label = d.flow_label;
  ah.sgid_index = d.sgid_index;
  ah.hop_limit = d.hop_limit;
  ah.traffic_class = d.traffic_class;
  ah.sl = d.sl;
  ah.static_rate = d.static_rate;
  ah.port_num = d.port_num;
  ah.ah_flags = d.is_global ? IB_AH_GRH : 0;
}

ib_uverbs_qp_dest dest_of(const rdma_ah_attr& ah) {
  ib_uverbs_qp_dest d{};
  std::memcpy(d.dgid, ah.dgid, sizeof d.dgid);
  d.flow_label = ah.flow_label;
  d.sgid_index = ah.sgid_index;
  d.hop_limit = ah.hop_limit;
  d.traffic_class = ah.traffic_class;
  d.sl = ah.sl;
  d.static_rate = ah.static_rate;
  d.port_num = ah.port_num;
  d.is_global = (ah.ah_flags & IB_AH_GRH) != 0;
  return d;
}

}  // namespace

int ib_uverbs_file::create_qp(bundle& b) {
  ib_uverbs_create_qp cmd;
  std::memcpy(&cmd, b.core, sizeof cmd);
  if (cmd.is_srq) return -EOPNOTSUPP;  // no shared receive queues
  auto* pd = static_cast<ib_pd*>(lookup(uobj_type::pd, cmd.pd_handle));
  auto* send_cq = static_cast<ib_cq*>(lookup(uobj_type::cq, cmd.send_cq_handle));
  auto* recv_cq = static_cast<ib_cq*>(lookup(uobj_type::cq, cmd.recv_cq_handle));
  if (!pd || !send_cq || !recv_cq) return -EINVAL;
  ib_qp_init_attr attr;
  attr.send_cq = send_cq;
  attr.recv_cq = recv_cq;
  attr.qp_type = ib_qp_type(cmd.qp_type);
  attr.sq_sig_all = cmd.sq_sig_all;
  attr.cap = {cmd.max_send_wr, cmd.max_recv_wr, cmd.max_send_sge, cmd.max_recv_sge, cmd.max_inline_data};
  // The handle comes first: the QP's events name it from the moment the device has it.
  const uint32_t handle = alloc_handle(uobj_type::qp, nullptr);
  uobjects_[handle].user_handle = cmd.user_handle;
  attr.event_handler = [this, handle](const ib_event& e) { async_event(handle, e.event); };
  int err = 0;
  ib_qp* qp = dev_.create_user_qp(ucontext_, pd, attr, b.udata, err);
  if (!qp) {
    uobjects_[handle] = {};
    return err;
  }
  uobject& u = uobjects_[handle];
  u.object = qp;
  u.pd = cmd.pd_handle;
  uobjects_[cmd.pd_handle].users++;
  const ib_uverbs_create_qp_resp resp{handle,
                                      qp->qp_num,
                                      attr.cap.max_send_wr,
                                      attr.cap.max_recv_wr,
                                      attr.cap.max_send_sge,
                                      attr.cap.max_recv_sge,
                                      attr.cap.max_inline_data,
                                      0};
  if (int ret = respond(b, &resp, sizeof resp)) {
    destroy_uobject(handle);
    return ret;
  }
  return 0;
}

int ib_uverbs_file::modify(ib_qp* qp, const ib_uverbs_modify_qp& cmd) {
  if (cmd.attr_mask & ~kPlainAttrMask) return -EOPNOTSUPP;
  ib_qp_attr attr;
  attr.qp_state = ib_qp_state(cmd.qp_state);
  attr.cur_qp_state = ib_qp_state(cmd.cur_qp_state);
  attr.path_mtu = cmd.path_mtu;
  attr.path_mig_state = cmd.path_mig_state;
  attr.qkey = cmd.qkey;
  attr.rq_psn = cmd.rq_psn;
  attr.sq_psn = cmd.sq_psn;
  attr.dest_qp_num = cmd.dest_qp_num;
  attr.qp_access_flags = int(cmd.qp_access_flags);
  attr.pkey_index = cmd.pkey_index;
  attr.en_sqd_async_notify = cmd.en_sqd_async_notify;
  attr.max_rd_atomic = cmd.max_rd_atomic;
  attr.max_dest_rd_atomic = cmd.max_dest_rd_atomic;
  attr.min_rnr_timer = cmd.min_rnr_timer;
  attr.port_num = cmd.port_num;
  attr.timeout = cmd.timeout;
  attr.retry_cnt = cmd.retry_cnt;
  attr.rnr_retry = cmd.rnr_retry;
  copy_dest(attr.ah_attr, cmd.dest);
  if (attr.qp_state > IB_QPS_ERR || attr.cur_qp_state > IB_QPS_ERR) return -EINVAL;
  return dev_.modify_user_qp(qp, attr, cmd.attr_mask);
}

int ib_uverbs_file::modify_qp(bundle& b) {
  ib_uverbs_modify_qp cmd;
  std::memcpy(&cmd, b.core, sizeof cmd);
  auto* qp = static_cast<ib_qp*>(lookup(uobj_type::qp, cmd.qp_handle));
  return qp ? modify(qp, cmd) : -EINVAL;
}

// The extended form adds a rate limit (not offered) and answers with its length.
int ib_uverbs_file::ex_modify_qp(bundle& b) {
  ib_uverbs_ex_modify_qp cmd;
  std::memcpy(&cmd, b.core, sizeof cmd);
  auto* qp = static_cast<ib_qp*>(lookup(uobj_type::qp, cmd.base.qp_handle));
  if (!qp || cmd.reserved) return -EINVAL;
  if (cmd.rate_limit) return -EOPNOTSUPP;
  if (int ret = modify(qp, cmd.base)) return ret;
  const ib_uverbs_ex_modify_qp_resp resp{0, uint32_t(std::min(b.out_len, sizeof(ib_uverbs_ex_modify_qp_resp)))};
  return respond(b, &resp, sizeof resp);
}

int ib_uverbs_file::query_qp(bundle& b) {
  ib_uverbs_query_qp cmd;
  std::memcpy(&cmd, b.core, sizeof cmd);
  auto* qp = static_cast<ib_qp*>(lookup(uobj_type::qp, cmd.qp_handle));
  if (!qp) return -EINVAL;
  ib_qp_attr attr;
  ib_qp_init_attr init;
  if (int ret = dev_.query_user_qp(qp, &attr, &init)) return ret;
  ib_uverbs_query_qp_resp resp{};
  resp.dest = dest_of(attr.ah_attr);
  resp.max_send_wr = attr.cap.max_send_wr;
  resp.max_recv_wr = attr.cap.max_recv_wr;
  resp.max_send_sge = attr.cap.max_send_sge;
  resp.max_recv_sge = attr.cap.max_recv_sge;
  resp.max_inline_data = attr.cap.max_inline_data;
  resp.qkey = attr.qkey;
  resp.rq_psn = attr.rq_psn;
  resp.sq_psn = attr.sq_psn;
  resp.dest_qp_num = attr.dest_qp_num;
  resp.qp_access_flags = uint32_t(attr.qp_access_flags);
  resp.pkey_index = attr.pkey_index;
  resp.qp_state = attr.qp_state;
  resp.cur_qp_state = attr.cur_qp_state;
  resp.path_mtu = attr.path_mtu;
  resp.path_mig_state = attr.path_mig_state;
  resp.sq_draining = attr.sq_draining;
  resp.max_rd_atomic = attr.max_rd_atomic;
  resp.max_dest_rd_atomic = attr.max_dest_rd_atomic;
  resp.min_rnr_timer = attr.min_rnr_timer;
  resp.port_num = attr.port_num;
  resp.timeout = attr.timeout;
  resp.retry_cnt = attr.retry_cnt;
  resp.rnr_retry = attr.rnr_retry;
  resp.sq_sig_all = init.sq_sig_all;
  return respond(b, &resp, sizeof resp);
}

// RoCE reaches a peer by its GID: an address without one is refused by the driver.
int ib_uverbs_file::create_ah(bundle& b) {
  ib_uverbs_create_ah cmd;
  std::memcpy(&cmd, b.core, sizeof cmd);
  auto* pd = static_cast<ib_pd*>(lookup(uobj_type::pd, cmd.pd_handle));
  if (!pd) return -EINVAL;
  rdma_ah_attr attr;
  std::memcpy(attr.dgid, cmd.attr.grh.dgid, sizeof attr.dgid);
  attr.flow_label = cmd.attr.grh.flow_label;
  attr.sgid_index = cmd.attr.grh.sgid_index;
  attr.hop_limit = cmd.attr.grh.hop_limit;
  attr.traffic_class = cmd.attr.grh.traffic_class;
  attr.sl = cmd.attr.sl;
  attr.static_rate = cmd.attr.static_rate;
  attr.port_num = cmd.attr.port_num;
  attr.ah_flags = cmd.attr.is_global ? IB_AH_GRH : 0;
  if (attr.port_num != 1) return -EINVAL;
  int err = 0;
  ib_ah* ah = dev_.create_user_ah(pd, attr, b.udata, err);
  if (!ah) return err;
  const uint32_t handle = alloc_handle(uobj_type::ah, ah);
  uobjects_[handle].user_handle = cmd.user_handle;
  uobjects_[handle].pd = cmd.pd_handle;
  uobjects_[cmd.pd_handle].users++;
  const ib_uverbs_create_ah_resp resp{handle};
  if (int ret = respond(b, &resp, sizeof resp)) {
    destroy_uobject(handle);
    return ret;
  }
  return 0;
}

int ib_uverbs_file::destroy_ah(bundle& b) {
  ib_uverbs_destroy_ah cmd;
  std::memcpy(&cmd, b.core, sizeof cmd);
  if (!lookup(uobj_type::ah, cmd.ah_handle)) return -EINVAL;
  return destroy_uobject(cmd.ah_handle);
}

int ib_uverbs_file::destroy_qp(bundle& b) {
  ib_uverbs_destroy_qp cmd;
  std::memcpy(&cmd, b.core, sizeof cmd);
  if (!lookup(uobj_type::qp, cmd.qp_handle)) return -EINVAL;
  const uobject u = uobjects_[cmd.qp_handle];
  if (int ret = destroy_uobject(cmd.qp_handle)) return ret;
  ib_uverbs_destroy_qp_resp resp{u.events_queued};
  if (async_file_) resp.events_reported -= async_file_->withdraw_events(u.user_handle);
  return respond(b, &resp, sizeof resp);
}

}  // namespace ibcore::uverbs
