// CREATE_CQ, RESIZE_CQ and DESTROY_CQ (ib_uverbs_create_cq, ...), and the CQ's
// events: a completion event on the CQ's channel each time the device signals it
// (ib_uverbs_comp_handler), CQ_ERR on the context's async file, and the device's own events there.
#include <cerrno>
#include <cstring>

#include "driver/core/uverbs/uverbs_file.h"

namespace ibcore::uverbs {

int ib_uverbs_file::create_cq(bundle& b) {
  ib_uverbs_create_cq cmd;
  std::memcpy(&cmd, b.core, sizeof cmd);
  if (cmd.comp_vector >= dev_.num_comp_vectors) return -EINVAL;
  std::shared_ptr<ib_uverbs_event_file> channel;
  if (cmd.comp_channel >= 0 && !(channel = b.user->fget_event_file(cmd.comp_channel))) return -EINVAL;
  ib_cq_init_attr attr;
  attr.cqe = cmd.cqe;
  attr.comp_vector = cmd.comp_vector;
  int err = 0;
  ib_cq* cq = dev_.create_user_cq(ucontext_, attr, b.udata, err);
  if (!cq) return err;
  const uint32_t handle = alloc_handle(uobj_type::cq, cq);
  uobject& u = uobjects_[handle];
  u.user_handle = cmd.user_handle;
  u.channel = std::move(channel);
  cq->comp_handler = [this, handle](ib_cq*) { comp_event(handle); };
  cq->event_handler = [this, handle](const ib_event& e) { async_event(handle, e.event); };
  const ib_uverbs_create_cq_resp resp{handle, uint32_t(cq->cqe)};
  if (int ret = respond(b, &resp, sizeof resp)) {
    destroy_uobject(handle);
    return ret;
  }
  return 0;
}

int ib_uverbs_file::resize_cq(bundle& b) {
  ib_uverbs_resize_cq cmd;
  std::memcpy(&cmd, b.core, sizeof cmd);
  auto* cq = static_cast<ib_cq*>(lookup(uobj_type::cq, cmd.cq_handle));
  if (!cq) return -EINVAL;
  if (int ret = dev_.resize_user_cq(cq, int(cmd.cqe), b.udata)) return ret;
  const ib_uverbs_resize_cq_resp resp{uint32_t(cq->cqe), 0};
  return respond(b, &resp, sizeof resp);
}

void ib_uverbs_file::comp_event(uint32_t cq_handle) {
  uobject& u = uobjects_[cq_handle];
  if (!u.channel) return;
  const ib_uverbs_comp_event_desc desc{u.user_handle};
  u.channel->queue_event(&desc, sizeof desc);
  u.events_queued++;
}

void ib_uverbs_file::async_event(uint32_t handle, uint32_t event_type) {
  uobject& u = uobjects_[handle];
  if (!async_file_) return;
  const ib_uverbs_async_event_desc desc{u.user_handle, event_type, 0};
  async_file_->queue_event(&desc, sizeof desc);
  (u.type == uobj_type::cq ? u.async_events_queued : u.events_queued)++;
}

void ib_uverbs_file::device_event(const ib_event& e) {
  if (!async_file_) return;
  const ib_uverbs_async_event_desc desc{1, uint32_t(e.event), 0};  // the device's one port
  async_file_->queue_event(&desc, sizeof desc);
}

// The reply counts the events the application has read: those it has not are taken back,
// as the kernel drops a destroyed CQ's queued events, and libibverbs waits until it has
// acknowledged as many as the reply says.
int ib_uverbs_file::destroy_cq(bundle& b) {
  ib_uverbs_destroy_cq cmd;
  std::memcpy(&cmd, b.core, sizeof cmd);
  if (!lookup(uobj_type::cq, cmd.cq_handle)) return -EINVAL;
  const uobject u = uobjects_[cmd.cq_handle];
  if (int ret = destroy_uobject(cmd.cq_handle)) return ret;
  ib_uverbs_destroy_cq_resp resp{u.events_queued, u.async_events_queued};
  if (u.channel) resp.comp_events_reported -= u.channel->withdraw_events(u.user_handle);
  if (async_file_) resp.async_events_reported -= async_file_->withdraw_events(u.user_handle);
  return respond(b, &resp, sizeof resp);
}

}  // namespace ibcore::uverbs
