#include "model/testbench/raw_verbs.h"

#include <cerrno>
#include <cstring>

#include "driver/core/cq.h"
#include "driver/irdma/irdma_device.h"
#include "model/testbench/host.h"

namespace irdma_sim::testbench {

using namespace ibcore;

namespace {

void check(int ret, const std::string& what) {
  if (ret < 0) throw VerbsError(what + " failed: errno " + std::to_string(-ret), -ret);
}

constexpr uint64_t kPage = 4096;

}  // namespace

RawVerbs::RawVerbs(HostSession& session) : session_(session) {}

RawVerbs::~RawVerbs() {
  try {
    close();
  } catch (const std::exception&) {  // the session may be down already: nothing left to free
  }
}

void RawVerbs::close() {
  if (closed_) return;
  closed_ = true;
  irdma::irdma_device& dev = session_.host().driver();
  int first = 0;
  session_.host().run_on_host([&] {
    for (auto& [num, q] : qps_) first = first ? first : dev.destroy_qp(q.qp);
    if (reg_qp_) first = first ? first : dev.destroy_qp(reg_qp_);
    for (auto& [handle, m] : mrs_) {
      const int ret = dev.dereg_mr(m.mr);
      first = first ? first : ret;
      if (!ret) dev.hw().dma.free_coherent(m.buf);  // a key the device still holds keeps its memory
    }
    for (auto& [id, p] : pds_) dev.dealloc_pd(p.pd);
  });
  qps_.clear();
  mrs_.clear();
  pds_.clear();
  check(first, "closing the verbs context");
}

RawVerbs::Pd& RawVerbs::pd(uint32_t handle) {
  auto it = pds_.find(handle);
  if (it == pds_.end()) throw VerbsError("no PD " + std::to_string(handle), EINVAL);
  return it->second;
}

RawVerbs::MrState& RawVerbs::mr(uint32_t handle) {
  auto it = mrs_.find(handle);
  if (it == mrs_.end()) throw VerbsError("no MR " + std::to_string(handle), EINVAL);
  return it->second;
}

RawVerbs::QpEntry& RawVerbs::qp(uint32_t qp_num) {
  auto it = qps_.find(qp_num);
  if (it == qps_.end()) throw VerbsError("no QP " + std::to_string(qp_num) + " in this context", EINVAL);
  return it->second;
}

const RawVerbs::QpEntry& RawVerbs::qp(uint32_t qp_num) const { return const_cast<RawVerbs*>(this)->qp(qp_num); }

uint32_t RawVerbs::alloc_pd() {
  ErrPtr<irdma::irdma_pd> made = ErrPtr<irdma::irdma_pd>::error(-EINVAL);
  session_.host().run_on_host([&] { made = session_.host().driver().alloc_pd(); });
  check(made.is_err() ? made.err() : 0, "ib_alloc_pd");
  const uint32_t id = made.get()->pd_id;
  pds_[id].pd = made.get();
  return id;
}

void RawVerbs::dealloc_pd(uint32_t handle) {
  Pd& p = pd(handle);
  if (p.users)
    throw VerbsError("PD " + std::to_string(handle) + " still has " + std::to_string(p.users) +
                         " MR(s) or QP(s): free them first",
                     EBUSY);
  session_.host().run_on_host([&] { session_.host().driver().dealloc_pd(p.pd); });
  pds_.erase(handle);
}

void RawVerbs::ensure_registration_qp() {
  if (reg_qp_) return;
  if (!reg_cq_) reg_cq_ = session_.alloc_cq(8, 0);
  ib_qp_init_attr attr;
  attr.send_cq = attr.recv_cq = session_.cq(reg_cq_);
  attr.cap.max_send_wr = 4;
  attr.cap.max_recv_wr = 1;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  irdma::irdma_device& dev = session_.host().driver();
  int err = 0;
  session_.host().run_on_host([&] {
    auto made = dev.create_qp(attr);
    if (made.is_err()) {
      err = made.err();
      return;
    }
    reg_qp_ = made.get();
    err = dev.connect_qp(reg_qp_, reg_qp_->qp_num);  // its own peer: it only registers
    if (err) drop_registration_qp();
  });
  check(err, "creating the QP that registers memory");
}

void RawVerbs::drop_registration_qp() {
  session_.host().driver().destroy_qp(reg_qp_);  // a failure leaves nothing more to do with it
  reg_qp_ = nullptr;
}

void RawVerbs::register_region(MrState& m) {
  ensure_registration_qp();
  irdma::irdma_device& dev = session_.host().driver();
  ib_cq* cq = session_.cq(reg_cq_);
  const uint32_t key = (m.mr->rkey & ~0xFFu) | ((m.mr->rkey + 1) & 0xFFu);  // ib_update_fast_reg_key
  m.mr->lkey = m.mr->rkey = key;
  ib_send_wr wr;
  wr.opcode = IB_WR_REG_MR;
  wr.send_flags = IB_SEND_SIGNALED;
  wr.reg.mr = m.mr;
  wr.reg.key = key;
  wr.reg.access = m.info.access;
  ib_wc wc{};
  int err = 0, n = 0;
  session_.host().run_on_host([&] {
    if ((err = dev.post_send(reg_qp_, &wr, nullptr))) return;
    // A REG_MR takes the device a few microseconds; a millisecond is a broken device.
    for (int waited = 0; !(n = ib_poll_cq(cq, 1, &wc)) && waited < 1000; waited++) dev.hw().exec.delay_ns(1000);
  });
  // A registration QP that failed one is not trusted with the next: it may be in error, or
  // complete this one late.
  if (err || n <= 0 || wc.status != IB_WC_SUCCESS) session_.host().run_on_host([&] { drop_registration_qp(); });
  check(err, "posting REG_MR");
  if (n <= 0) throw VerbsError("REG_MR did not complete within 1 ms of simulated time", ETIMEDOUT);
  if (wc.status != IB_WC_SUCCESS)
    throw VerbsError("REG_MR completed with status " + std::to_string(wc.status), EIO);
  m.info.lkey = m.info.rkey = key;
}

RawVerbs::Mr RawVerbs::reg_mr(uint32_t pd_handle, uint64_t length, int access) {
  Pd& owner = pd(pd_handle);
  if (length == 0 || length > (1ull << 30)) throw VerbsError("an MR of " + std::to_string(length) + " bytes", EINVAL);
  irdma::irdma_device& dev = session_.host().driver();
  MrState m;
  m.info = {next_mr_, pd_handle, 0, 0, 0, length, access};
  int err = 0;
  session_.host().run_on_host([&] {
    m.buf = dev.hw().dma.alloc_coherent(length, kPage);
    if (!m.buf) {
      err = -ENOMEM;
      return;
    }
    auto made = dev.alloc_mr(uint32_t((length + kPage - 1) / kPage), owner.pd);
    if (made.is_err()) {
      err = made.err();
      return;
    }
    m.mr = made.get();
    err = dev.map_mr_sg(m.mr, m.buf.iova, length);
  });
  const auto undo = [&] {
    session_.host().run_on_host([&] {
      if (m.mr) dev.dereg_mr(m.mr);
      if (m.buf) dev.hw().dma.free_coherent(m.buf);
    });
  };
  if (err < 0) {
    undo();
    check(err, "registering an MR of " + std::to_string(length) + " bytes");
  }
  m.info.addr = m.buf.iova;
  try {
    register_region(m);
  } catch (const VerbsError&) {
    undo();
    throw;
  }
  owner.users++;
  next_mr_++;
  return mrs_.emplace(m.info.handle, m).first->second.info;
}

void RawVerbs::dereg_mr(uint32_t handle) {
  MrState& m = mr(handle);
  irdma::irdma_device& dev = session_.host().driver();
  int err = 0;
  session_.host().run_on_host([&] {
    err = dev.dereg_mr(m.mr);
    if (!err) dev.hw().dma.free_coherent(m.buf);
  });
  check(err, "deregistering MR " + std::to_string(handle));
  pd(m.info.pd).users--;
  mrs_.erase(handle);
}

void RawVerbs::write_mr(uint32_t handle, uint64_t offset, const std::string& data) {
  MrState& m = mr(handle);
  if (offset > m.info.length || data.size() > m.info.length - offset)
    throw VerbsError("writing " + std::to_string(data.size()) + " bytes at " + std::to_string(offset) + " of an MR of " +
                         std::to_string(m.info.length),
                     EINVAL);
  std::memcpy(static_cast<uint8_t*>(m.buf.cpu) + offset, data.data(), data.size());
}

std::string RawVerbs::read_mr(uint32_t handle, uint64_t offset, uint64_t length) {
  MrState& m = mr(handle);
  if (offset > m.info.length || length > m.info.length - offset)
    throw VerbsError("reading " + std::to_string(length) + " bytes at " + std::to_string(offset) + " of an MR of " +
                         std::to_string(m.info.length),
                     EINVAL);
  return std::string(static_cast<const char*>(m.buf.cpu) + offset, length);
}

uint32_t RawVerbs::create_qp(QpInit& init) {
  Pd& owner = pd(init.pd);
  ib_qp_init_attr attr;
  attr.send_cq = session_.cq(init.send_cq);
  attr.recv_cq = session_.cq(init.recv_cq);
  attr.cap = init.cap;
  attr.qp_type = init.type;
  irdma::irdma_device& dev = session_.host().driver();
  ErrPtr<irdma::irdma_qp> made = ErrPtr<irdma::irdma_qp>::error(-EINVAL);
  session_.host().run_on_host([&] { made = dev.create_qp(attr, owner.pd); });
  check(made.is_err() ? made.err() : 0, "creating a QP");
  init.cap = attr.cap;
  const uint32_t num = made.get()->qp_num;
  qps_[num] = {made.get(), init.pd, QpState::reset, 0, 0};
  owner.users++;
  return num;
}

void RawVerbs::modify_qp(uint32_t qp_num, QpState to, uint32_t dest_qp, uint32_t qkey) {
  QpEntry& q = qp(qp_num);
  const QpState from = q.state;
  const bool allowed = to == QpState::err || (from == QpState::reset && to == QpState::init) ||
                       (from == QpState::init && to == QpState::rtr) || (from == QpState::rtr && to == QpState::rts);
  if (!allowed)
    throw VerbsError("QP " + std::to_string(qp_num) + " cannot move from state " + std::to_string(int(from)) +
                         " to " + std::to_string(int(to)),
                     EINVAL);
  irdma::irdma_device& dev = session_.host().driver();
  int err = 0;
  if (to == QpState::rtr) {
    q.dest = dest_qp;
    q.qkey = qkey;
  } else if (to == QpState::rts) {
    session_.host().run_on_host([&] { err = dev.connect_qp(q.qp, q.dest, q.qkey); });
  } else if (to == QpState::err) {
    session_.host().run_on_host([&] { err = dev.flush_qp(q.qp); });
    if (err == -EALREADY) err = 0;  // in error already: the move changes nothing
  }
  check(err, "moving QP " + std::to_string(qp_num) + " to state " + std::to_string(int(to)));
  q.state = to;
}

QpState RawVerbs::qp_state(uint32_t qp_num) const { return qp(qp_num).state; }

void RawVerbs::destroy_qp(uint32_t qp_num) {
  QpEntry& q = qp(qp_num);
  int err = 0;
  session_.host().run_on_host([&] { err = session_.host().driver().destroy_qp(q.qp); });
  check(err, "destroying QP " + std::to_string(qp_num));
  pd(q.pd).users--;
  qps_.erase(qp_num);
}

namespace {

// Links `wrs` into a chain over their scatter-gather lists.
template <typename Wr>
void chain(std::vector<Wr>& wrs, const std::vector<std::vector<ib_sge>>& sgls) {
  for (size_t i = 0; i < wrs.size(); i++) {
    wrs[i].sg_list = sgls[i].empty() ? nullptr : sgls[i].data();
    wrs[i].num_sge = int(sgls[i].size());
    wrs[i].next = i + 1 < wrs.size() ? &wrs[i + 1] : nullptr;
  }
}

// Posts `wrs` over their scatter-gather lists as one chain through `post` (the driver's
// post_send or post_recv); an error names the work request that failed.
template <typename Wr, typename Post>
void post_chain(HostSession& session, const char* verb, uint32_t qp_num, std::vector<Wr>& wrs,
                const std::vector<std::vector<ib_sge>>& sgls, Post post) {
  chain(wrs, sgls);
  const Wr* bad = nullptr;
  int err = 0;
  session.host().run_on_host([&] { err = post(wrs.data(), &bad); });
  if (err < 0)
    check(err, std::string(verb) + " of work request " + std::to_string(bad ? bad - wrs.data() : 0) + " on QP " +
                   std::to_string(qp_num));
}

}  // namespace

void RawVerbs::post_send(uint32_t qp_num, std::vector<ib_send_wr> wrs, const std::vector<std::vector<ib_sge>>& sgls) {
  QpEntry& q = qp(qp_num);
  if (wrs.empty()) return;
  if (q.state != QpState::rts && q.state != QpState::err)
    throw VerbsError("post_send on QP " + std::to_string(qp_num) + " before it is ready to send (RTS)", EINVAL);
  post_chain(session_, "post_send", qp_num, wrs, sgls,
             [&](const ib_send_wr* first, const ib_send_wr** bad) { return session_.host().driver().post_send(q.qp, first, bad); });
}

void RawVerbs::post_recv(uint32_t qp_num, std::vector<ib_recv_wr> wrs, const std::vector<std::vector<ib_sge>>& sgls) {
  QpEntry& q = qp(qp_num);
  if (wrs.empty()) return;
  if (q.state == QpState::reset)
    throw VerbsError("post_recv on QP " + std::to_string(qp_num) + " in RESET", EINVAL);
  post_chain(session_, "post_recv", qp_num, wrs, sgls,
             [&](const ib_recv_wr* first, const ib_recv_wr** bad) { return session_.host().driver().post_recv(q.qp, first, bad); });
}

}  // namespace irdma_sim::testbench
