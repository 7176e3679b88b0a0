#include "driver/core/uverbs/uverbs_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ibcore::uverbs {

// What a command's buffers must hold at least (the kernel's uverbs_api write method).
struct ib_uverbs_file::method {
  uint32_t command;
  bool ex;
  size_t req_size;   // core request
  size_t resp_size;  // core response (0: none)
  int (ib_uverbs_file::*handler)(bundle&);
};

namespace {

constexpr uint32_t kNoFd = 0xFFFFFFFF;  // until the transport writes the file's number

template <typename T>
T read_core(const uint8_t* core) {
  T v;
  std::memcpy(&v, core, sizeof v);
  return v;
}

}  // namespace

const ib_uverbs_file::method* ib_uverbs_file::find_method(uint32_t command, bool ex) {
  static const method kMethods[] = {
      {IB_USER_VERBS_CMD_GET_CONTEXT, false, sizeof(ib_uverbs_get_context), sizeof(ib_uverbs_get_context_resp),
       &ib_uverbs_file::get_context},
      {IB_USER_VERBS_CMD_QUERY_DEVICE, false, sizeof(ib_uverbs_query_device), sizeof(ib_uverbs_query_device_resp),
       &ib_uverbs_file::query_device},
      {IB_USER_VERBS_EX_CMD_QUERY_DEVICE, true, sizeof(ib_uverbs_ex_query_device),
       offsetof(ib_uverbs_ex_query_device_resp, odp_caps), &ib_uverbs_file::ex_query_device},
      {IB_USER_VERBS_CMD_QUERY_PORT, false, sizeof(ib_uverbs_query_port), sizeof(ib_uverbs_query_port_resp),
       &ib_uverbs_file::query_port},
      {IB_USER_VERBS_CMD_ALLOC_PD, false, sizeof(ib_uverbs_alloc_pd), sizeof(ib_uverbs_alloc_pd_resp),
       &ib_uverbs_file::alloc_pd},
      {IB_USER_VERBS_CMD_DEALLOC_PD, false, sizeof(ib_uverbs_dealloc_pd), 0, &ib_uverbs_file::dealloc_pd},
      {IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, false, sizeof(ib_uverbs_create_comp_channel),
       sizeof(ib_uverbs_create_comp_channel_resp), &ib_uverbs_file::create_comp_channel},
      {IB_USER_VERBS_CMD_REG_MR, false, sizeof(ib_uverbs_reg_mr), sizeof(ib_uverbs_reg_mr_resp),
       &ib_uverbs_file::reg_mr},
      {IB_USER_VERBS_CMD_DEREG_MR, false, sizeof(ib_uverbs_dereg_mr), 0, &ib_uverbs_file::dereg_mr},
      {IB_USER_VERBS_CMD_ALLOC_MW, false, sizeof(ib_uverbs_alloc_mw), sizeof(ib_uverbs_alloc_mw_resp),
       &ib_uverbs_file::alloc_mw},
      {IB_USER_VERBS_CMD_DEALLOC_MW, false, sizeof(ib_uverbs_dealloc_mw), 0, &ib_uverbs_file::dealloc_mw},
      {IB_USER_VERBS_CMD_CREATE_CQ, false, sizeof(ib_uverbs_create_cq), sizeof(ib_uverbs_create_cq_resp),
       &ib_uverbs_file::create_cq},
      {IB_USER_VERBS_CMD_RESIZE_CQ, false, sizeof(ib_uverbs_resize_cq), sizeof(ib_uverbs_resize_cq_resp),
       &ib_uverbs_file::resize_cq},
      {IB_USER_VERBS_CMD_DESTROY_CQ, false, sizeof(ib_uverbs_destroy_cq), sizeof(ib_uverbs_destroy_cq_resp),
       &ib_uverbs_file::destroy_cq},
      {IB_USER_VERBS_CMD_CREATE_QP, false, sizeof(ib_uverbs_create_qp), sizeof(ib_uverbs_create_qp_resp),
       &ib_uverbs_file::create_qp},
      {IB_USER_VERBS_CMD_QUERY_QP, false, sizeof(ib_uverbs_query_qp), sizeof(ib_uverbs_query_qp_resp),
       &ib_uverbs_file::query_qp},
      {IB_USER_VERBS_CMD_MODIFY_QP, false, sizeof(ib_uverbs_modify_qp), 0, &ib_uverbs_file::modify_qp},
      {IB_USER_VERBS_EX_CMD_MODIFY_QP, true, sizeof(ib_uverbs_ex_modify_qp),
       sizeof(ib_uverbs_ex_modify_qp_resp), &ib_uverbs_file::ex_modify_qp},
      {IB_USER_VERBS_CMD_DESTROY_QP, false, sizeof(ib_uverbs_destroy_qp), sizeof(ib_uverbs_destroy_qp_resp),
       &ib_uverbs_file::destroy_qp},
      {IB_USER_VERBS_CMD_CREATE_AH, false, sizeof(ib_uverbs_create_ah), sizeof(ib_uverbs_create_ah_resp),
       &ib_uverbs_file::create_ah},
      {IB_USER_VERBS_CMD_DESTROY_AH, false, sizeof(ib_uverbs_destroy_ah), 0, &ib_uverbs_file::destroy_ah},
  };
  for (const method& m : kMethods)
    if (m.command == command && m.ex == ex) return &m;
  return nullptr;
}

// What a process left behind goes in the order its objects depend on each other: QPs,
// then CQs and memory, then PDs. A destroy the device refuses leaves that object to it.
ib_uverbs_file::~ib_uverbs_file() {
  for (const uobj_type type : {uobj_type::qp, uobj_type::ah, uobj_type::mw, uobj_type::cq, uobj_type::mr, uobj_type::pd})
    for (uint32_t h = 0; h < uobjects_.size(); h++)
      if (uobjects_[h].type == type) destroy_uobject(h);
  if (ucontext_) dev_.dealloc_ucontext(ucontext_);
}

int ib_uverbs_file::destroy_uobject(uint32_t handle) {
  uobject& u = uobjects_[handle];
  int ret = 0;
  switch (u.type) {
    case uobj_type::none: return 0;
    case uobj_type::pd:
      if (u.users) return -EBUSY;
      ret = dev_.dealloc_user_pd(static_cast<ib_pd*>(u.object));
      break;
    case uobj_type::mr:
      ret = dev_.dereg_user_mr(static_cast<ib_mr*>(u.object));
      if (!ret) uobjects_[u.pd].users--;
      break;
    case uobj_type::mw:
      ret = dev_.dealloc_user_mw(static_cast<ib_mw*>(u.object));
      if (!ret) uobjects_[u.pd].users--;
      break;
    case uobj_type::cq: {
      auto* cq = static_cast<ib_cq*>(u.object);
      if (cq->usecnt) return -EBUSY;
      ret = dev_.destroy_cq(cq);
      break;
    }
    case uobj_type::qp:
      ret = dev_.destroy_user_qp(static_cast<ib_qp*>(u.object));
      if (!ret) uobjects_[u.pd].users--;
      break;
    case uobj_type::ah:
      ret = dev_.destroy_user_ah(static_cast<ib_ah*>(u.object));
      if (!ret) uobjects_[u.pd].users--;
      break;
  }
  if (!ret) u = {};
  return ret;
}

long ib_uverbs_file::write(const void* buf, size_t count, ib_uverbs_user& user) {
  const auto* bytes = static_cast<const uint8_t*>(buf);
  if (count < sizeof(ib_uverbs_cmd_hdr)) return -EINVAL;
  const auto hdr = read_core<ib_uverbs_cmd_hdr>(bytes);
  if (hdr.command & ~(IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_CMD_COMMAND_MASK)) return -EINVAL;
  const bool ex = hdr.command & IB_USER_VERBS_CMD_FLAG_EXTENDED;
  const method* m = find_method(hdr.command & IB_USER_VERBS_CMD_COMMAND_MASK, ex);
  if (!m) return -EOPNOTSUPP;

  bundle b;
  b.user = &user;
  size_t driver_in = 0, driver_out = 0;
  if (!ex) {
    if (size_t(hdr.in_words) * 4 != count) return -EINVAL;
    b.core = bytes + sizeof hdr;
    const size_t in_len = count - sizeof hdr;
    const size_t out_len = size_t(hdr.out_words) * 4;
    if (in_len < m->req_size || out_len < m->resp_size) return -ENOSPC;
    // A command with a reply starts with the address it goes to.
    if (m->resp_size) b.response = read_core<uint64_t>(b.core);
    b.core_len = m->req_size;
    b.out_len = m->resp_size;
    driver_in = in_len - m->req_size;
    driver_out = m->resp_size ? out_len - m->resp_size : 0;
  } else {
    if (count < sizeof hdr + sizeof(ib_uverbs_ex_cmd_hdr)) return -EINVAL;
    const auto ex_hdr = read_core<ib_uverbs_ex_cmd_hdr>(bytes + sizeof hdr);
    if (ex_hdr.cmd_hdr_reserved) return -EINVAL;
    const size_t body = count - sizeof hdr - sizeof ex_hdr;
    if ((size_t(hdr.in_words) + ex_hdr.provider_in_words) * 8 != body) return -EINVAL;
    if (ex_hdr.response ? !hdr.out_words && !ex_hdr.provider_out_words
                        : hdr.out_words || ex_hdr.provider_out_words)
      return -EINVAL;
    b.core = bytes + sizeof hdr + sizeof ex_hdr;
    b.core_len = size_t(hdr.in_words) * 8;
    b.response = ex_hdr.response;
    b.out_len = size_t(hdr.out_words) * 8;
    if (b.core_len < m->req_size || b.out_len < m->resp_size) return -ENOSPC;
    driver_in = size_t(ex_hdr.provider_in_words) * 8;
    driver_out = size_t(ex_hdr.provider_out_words) * 8;
  }
  b.udata.inbuf = b.core + b.core_len;
  b.udata.inlen = driver_in;
  b.udata.outbuf = b.response + b.out_len;
  b.udata.outlen = driver_out;
  b.udata.copy_to_user = [&user](uint64_t addr, const void* src, size_t len) {
    return user.copy_to_user(addr, src, len);
  };
  b.udata.mm = &user.mm();
  if (!ucontext_ && m->command != IB_USER_VERBS_CMD_GET_CONTEXT) return -EINVAL;
  const int ret = (this->*m->handler)(b);
  return ret ? ret : long(count);
}

int ib_uverbs_file::respond(const bundle& b, const void* resp, size_t len) {
  std::vector<uint8_t> out(b.out_len, 0);
  std::memcpy(out.data(), resp, std::min(len, out.size()));
  return b.user->copy_to_user(b.response, out.data(), out.size()) ? 0 : -EFAULT;
}

int ib_uverbs_file::mmap(uint64_t offset, uint64_t length, ib_mmap_range* out) {
  if (!ucontext_) return -EINVAL;
  return dev_.mmap(ucontext_, offset, length, out);
}

uint32_t ib_uverbs_file::alloc_handle(uobj_type type, void* object) {
  uint32_t h = 0;
  while (h < uobjects_.size() && uobjects_[h].type != uobj_type::none) h++;
  if (h == uobjects_.size()) uobjects_.emplace_back();
  uobjects_[h].type = type;
  uobjects_[h].object = object;
  return h;
}

void* ib_uverbs_file::lookup(uobj_type type, uint32_t handle) const {
  return handle < uobjects_.size() && uobjects_[handle].type == type ? uobjects_[handle].object : nullptr;
}

// The context first, then its async event file, which the reply names.
int ib_uverbs_file::get_context(bundle& b) {
  if (ucontext_) return -EINVAL;
  int err = 0;
  ib_ucontext* uctx = dev_.alloc_ucontext(b.udata, err);
  if (!uctx) return err;
  ib_uverbs_get_context_resp resp{kNoFd, dev_.num_comp_vectors};
  if (int ret = respond(b, &resp, sizeof resp)) {
    dev_.dealloc_ucontext(uctx);
    return ret;
  }
  async_file_ = b.user->install_event_file(b.response + offsetof(ib_uverbs_get_context_resp, async_fd));
  if (!async_file_) {
    dev_.dealloc_ucontext(uctx);
    return -EMFILE;
  }
  ucontext_ = uctx;
  return 0;
}

namespace {

ib_uverbs_query_device_resp device_resp(const ib_device& dev) {
  const ib_device_attr& a = dev.attrs;
  ib_uverbs_query_device_resp r{};
  r.fw_ver = a.fw_ver;
  r.node_guid = dev.node_guid;
  r.sys_image_guid = a.sys_image_guid;
  r.max_mr_size = a.max_mr_size;
  r.page_size_cap = a.page_size_cap;
  r.vendor_id = a.vendor_id;
  r.vendor_part_id = a.vendor_part_id;
  r.hw_ver = a.hw_ver;
  r.max_qp = uint32_t(a.max_qp);
  r.max_qp_wr = uint32_t(a.max_qp_wr);
  r.device_cap_flags = uint32_t(a.device_cap_flags);
  r.max_sge = uint32_t(std::min(a.max_send_sge, a.max_recv_sge));
  r.max_sge_rd = uint32_t(a.max_sge_rd);
  r.max_cq = uint32_t(a.max_cq);
  r.max_cqe = uint32_t(a.max_cqe);
  r.max_mr = uint32_t(a.max_mr);
  r.max_pd = uint32_t(a.max_pd);
  r.max_qp_rd_atom = uint32_t(a.max_qp_rd_atom);
  r.max_res_rd_atom = uint32_t(a.max_res_rd_atom);
  r.max_qp_init_rd_atom = uint32_t(a.max_qp_init_rd_atom);
  r.atomic_cap = uint32_t(a.atomic_cap);
  r.max_mw = uint32_t(a.max_mw);
  r.max_ah = uint32_t(a.max_ah);
  r.max_pkeys = a.max_pkeys;
  r.local_ca_ack_delay = a.local_ca_ack_delay;
  r.phys_port_cnt = uint8_t(dev.phys_port_cnt);
  return r;
}

}  // namespace

int ib_uverbs_file::query_device(bundle& b) {
  const ib_uverbs_query_device_resp resp = device_resp(dev_);
  return respond(b, &resp, sizeof resp);
}

// The extended form answers as much as the caller has room for, and says how much.
int ib_uverbs_file::ex_query_device(bundle& b) {
  const auto cmd = read_core<ib_uverbs_ex_query_device>(b.core);
  if (cmd.comp_mask || cmd.reserved) return -EINVAL;
  ib_uverbs_ex_query_device_resp resp{};
  resp.base = device_resp(dev_);
  resp.device_cap_flags_ex = dev_.attrs.device_cap_flags;
  resp.response_length = uint32_t(std::min(b.out_len, sizeof resp));
  return respond(b, &resp, sizeof resp);
}

int ib_uverbs_file::query_port(bundle& b) {
  const auto cmd = read_core<ib_uverbs_query_port>(b.core);
  ib_port_attr attr;
  if (int ret = dev_.query_port(cmd.port_num, &attr)) return ret;
  ib_uverbs_query_port_resp resp{};
  resp.port_cap_flags = attr.port_cap_flags;
  resp.max_msg_sz = attr.max_msg_sz;
  resp.gid_tbl_len = attr.gid_tbl_len;
  resp.pkey_tbl_len = attr.pkey_tbl_len;
  resp.state = attr.state;
  resp.max_mtu = attr.max_mtu;
  resp.active_mtu = attr.active_mtu;
  resp.active_width = attr.active_width;
  resp.active_speed = attr.active_speed;
  resp.phys_state = attr.phys_state;
  resp.link_layer = attr.link_layer;
  return respond(b, &resp, sizeof resp);
}

int ib_uverbs_file::alloc_pd(bundle& b) {
  int err = 0;
  ib_pd* pd = dev_.alloc_user_pd(ucontext_, b.udata, err);
  if (!pd) return err;
  const ib_uverbs_alloc_pd_resp resp{alloc_handle(uobj_type::pd, pd)};
  if (int ret = respond(b, &resp, sizeof resp)) {
    uobjects_[resp.pd_handle] = {};
    dev_.dealloc_user_pd(pd);
    return ret;
  }
  return 0;
}

int ib_uverbs_file::dealloc_pd(bundle& b) {
  const auto cmd = read_core<ib_uverbs_dealloc_pd>(b.core);
  if (!lookup(uobj_type::pd, cmd.pd_handle)) return -EINVAL;
  return destroy_uobject(cmd.pd_handle);
}

// A file of its own in the process, read for the completion events of the CQs made with it.
int ib_uverbs_file::create_comp_channel(bundle& b) {
  const ib_uverbs_create_comp_channel_resp resp{kNoFd};
  if (int ret = respond(b, &resp, sizeof resp)) return ret;
  std::shared_ptr<ib_uverbs_event_file> channel = b.user->install_event_file(b.response);
  if (!channel) return -EMFILE;
  comp_channels_.push_back(std::move(channel));
  return 0;
}

}  // namespace ibcore::uverbs
