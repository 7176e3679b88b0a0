#include "model/testbench/host_session.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "driver/core/cq.h"
#include "driver/core/cq_pool.h"
#include "driver/irdma/irdmadv.h"
#include "model/testbench/scenario.h"

namespace irdma_sim::testbench {

using namespace ibcore;

namespace {

void check(int ret, const std::string& what) {
  if (ret < 0) throw VerbsError(what + " failed: errno " + std::to_string(-ret), -ret);
}

uint32_t cq_num_of(const ib_cq* cq) {
  irdma::irdmadv_cq dv;
  irdma::irdmadv_query_cq(cq, &dv);
  return dv.cq_num;
}

}  // namespace

HostSession::HostSession(std::unique_ptr<Host> host) : host_(std::move(host)) {}

HostSession::~HostSession() = default;

HostSession::Qp& HostSession::qp(uint32_t qp_num) {
  auto it = qps_.find(qp_num);
  if (it == qps_.end()) throw VerbsError("no QP " + std::to_string(qp_num), EINVAL);
  return it->second;
}

ib_cq* HostSession::cq(uint32_t cq_num) {
  auto it = cqs_.find(cq_num);
  if (it == cqs_.end())
    throw VerbsError("no CQ " + std::to_string(cq_num) + " (taken from the pool or allocated) in this session", EINVAL);
  return it->second;
}

uint32_t HostSession::pool_get(unsigned nr_cqe, int comp_vector, ib_poll_context ctx) {
  ErrPtr<ib_cq> got = ErrPtr<ib_cq>::error(-EINVAL);
  host_->run_on_host([&] { got = ib_cq_pool_get(&host_->driver(), nr_cqe, comp_vector, ctx); });
  check(got.is_err() ? got.err() : 0, "ib_cq_pool_get");
  const uint32_t num = cq_num_of(got.get());
  watch(got.get(), num, false);
  pool_gets_[num].push_back(nr_cqe);
  return num;
}

void HostSession::watch(ib_cq* c, uint32_t num, bool own) {
  cqs_[num] = c;
  cq_events_[num].own = own;
  c->comp_handler = [this, num](ib_cq*) { cq_events_[num].completion++; };
  c->event_handler = [this, num](const ib_event& ev) {
    if (ev.event == IB_EVENT_CQ_ERR) cq_events_[num].error++;
  };
}

uint32_t HostSession::alloc_cq(int nr_cqe, unsigned comp_vector) {
  ErrPtr<ib_cq> got = ErrPtr<ib_cq>::error(-EINVAL);
  host_->run_on_host([&] { got = ib_alloc_cq(&host_->driver(), nullptr, nr_cqe, comp_vector, IB_POLL_DIRECT); });
  check(got.is_err() ? got.err() : 0, "ib_alloc_cq");
  const uint32_t num = cq_num_of(got.get());
  watch(got.get(), num, true);
  return num;
}

void HostSession::free_cq(uint32_t cq_num) {
  ib_cq* c = cq(cq_num);
  if (!cq_events_[cq_num].own)
    throw VerbsError("CQ " + std::to_string(cq_num) + " is from the pool: pool_put it instead", EINVAL);
  int ret = 0;
  host_->run_on_host([&] { ret = ib_free_cq(c); });
  check(ret, "ib_free_cq of CQ " + std::to_string(cq_num) + (ret == -EBUSY ? " (QPs still use it)" : ""));
  cqs_.erase(cq_num);
  cq_events_.erase(cq_num);
}

void HostSession::resize_cq(uint32_t cq_num, int nr_cqe) {
  ib_cq* c = cq(cq_num);
  int ret = 0;
  host_->run_on_host([&] { ret = ib_resize_cq(c, nr_cqe); });
  check(ret, "ib_resize_cq");
}

int HostSession::req_notify_cq(uint32_t cq_num, unsigned flags) {
  ib_cq* c = cq(cq_num);
  int ret = 0;
  host_->run_on_host([&] { ret = ib_req_notify_cq(c, flags); });
  check(ret, "ib_req_notify_cq");
  return ret;
}

std::map<std::string, uint64_t> HostSession::cq_events(uint32_t cq_num) {
  cq(cq_num);
  const CqEvents& e = cq_events_[cq_num];
  return {{"completion_events", e.completion}, {"cq_errors", e.error}};
}

void HostSession::pool_put(uint32_t cq_num, unsigned nr_cqe) {
  ib_cq* c = cq(cq_num);
  const auto gets = pool_gets_.find(cq_num);
  if (gets == pool_gets_.end())
    throw VerbsError("CQ " + std::to_string(cq_num) + " is not from the pool: ib_free_cq it instead", EINVAL);
  std::vector<unsigned>& taken = gets->second;
  const auto it = std::find(taken.begin(), taken.end(), nr_cqe);
  if (it == taken.end()) {
    std::string sizes;
    for (unsigned n : taken) sizes += (sizes.empty() ? "" : ", ") + std::to_string(n);
    throw VerbsError("pool_put of " + std::to_string(nr_cqe) + " entries: CQ " + std::to_string(cq_num) +
                         " was taken for " + sizes + " (put back what a get took)",
                     EINVAL);
  }
  if (taken.size() == 1) {
    std::string users;
    for (const auto& [num, q] : qps_)
      if (q.bq->cq() == c) users += (users.empty() ? "" : ", ") + std::to_string(num);
    if (!users.empty())
      throw VerbsError("CQ " + std::to_string(cq_num) + " still serves QP(s) " + users + ": destroy them first", EBUSY);
  }
  check(ib_cq_pool_put(c, nr_cqe), "ib_cq_pool_put");
  taken.erase(it);
  if (taken.empty()) {
    pool_gets_.erase(gets);
    cqs_.erase(cq_num);
    cq_events_.erase(cq_num);
  }
}

void HostSession::set_pool_policy(cq_pool_policy policy) { host_->driver().pool_policy = policy; }

std::pair<uint32_t, uint32_t> HostSession::create_qp_pair(uint32_t cq_a, uint32_t cq_b,
                                                          uint32_t sq_depth, uint32_t rq_depth,
                                                          uint32_t max_msg_bytes) {
  ib_cq* cqs[2] = {cq(cq_a), cq(cq_b)};
  std::unique_ptr<BufferedQp> made[2];
  int err = 0;
  const uint32_t slot = BufferedQp::slot_bytes_for(max_msg_bytes);
  host_->run_on_host([&] {
    for (int i = 0; i < 2 && !err; i++)
      made[i].reset(BufferedQp::create(host_->driver(), cqs[i], sq_depth, rq_depth, slot, err,
                                       IB_QPT_RC, BufferedQp::Slots::capacity));
    if (!err) err = host_->driver().connect_qp(made[0]->qp(), made[1]->qp_num());
    if (!err) err = host_->driver().connect_qp(made[1]->qp(), made[0]->qp_num());
    if (err)
      for (auto& m : made)
        if (m) m->destroy();
  });
  check(err, "creating a QP pair");
  const std::pair<uint32_t, uint32_t> nums{made[0]->qp_num(), made[1]->qp_num()};
  for (int i = 0; i < 2; i++) {
    Qp& q = qps_[i ? nums.second : nums.first];
    q.peer = i ? nums.first : nums.second;
    // Slots are taken lowest first.
    for (uint32_t s = made[i]->sq_depth(); s-- > 0;) q.sq.free.push_back(s);
    for (uint32_t s = made[i]->rq_depth(); s-- > 0;) q.rq.free.push_back(s);
    q.bq = std::move(made[i]);
  }
  return nums;
}

ib_qp_cap HostSession::qp_cap(uint32_t qp_num) { return qp(qp_num).bq->cap(); }

uint32_t HostSession::Queue::take(uint32_t qp_num, const char* queue) {
  if (free.empty())
    throw VerbsError("QP " + std::to_string(qp_num) + "'s " + queue + " queue is full: " +
                         std::to_string(posted.size()) + " work requests outstanding, as many as it holds " +
                         "(poll their completions first)",
                     ENOMEM);
  const uint32_t slot = free.back();
  free.pop_back();
  return slot;
}

std::optional<HostSession::Posted> HostSession::Queue::retire(uint64_t wr_id) {
  const auto it = std::find_if(posted.begin(), posted.end(), [&](const Posted& p) { return p.wr_id == wr_id; });
  if (it == posted.end()) return std::nullopt;
  const Posted done = *it;
  for (auto p = posted.begin(); p != std::next(it); ++p) free.push_back(p->slot);
  posted.erase(posted.begin(), std::next(it));
  return done;
}

void HostSession::destroy_qp(uint32_t qp_num) {
  Qp& q = qp(qp_num);
  int ret = 0;
  host_->run_on_host([&] { ret = q.bq->destroy(); });
  check(ret, "destroy_qp");
  qps_.erase(qp_num);
}

uint64_t HostSession::post(Qp& q, ib_send_wr& wr, const std::string& data, uint32_t length) {
  BufferedQp& bq = *q.bq;
  if (length > bq.slot_bytes())
    throw VerbsError("message of " + std::to_string(length) + " bytes exceeds the QP's " +
                         std::to_string(bq.slot_bytes()) + "-byte buffers", EINVAL);
  const uint32_t slot = q.sq.take(bq.qp_num(), "send");
  std::memcpy(bq.send_slot(slot), data.data(), data.size());
  const ib_sge sge = bq.send_sge(slot, length);
  wr.wr_id = next_wr_id_++;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  int ret = 0;
  host_->run_on_host([&] { ret = host_->driver().post_send(bq.qp(), &wr, nullptr); });
  if (ret) q.sq.free.push_back(slot);
  check(ret, "post_send");
  q.requests++;
  // READs and atomics bring bytes back into the slot: the completion will carry them.
  const bool fetches = wr.opcode == IB_WR_RDMA_READ || wr.opcode == IB_WR_ATOMIC_FETCH_AND_ADD ||
                       wr.opcode == IB_WR_ATOMIC_CMP_AND_SWP;
  q.sq.posted.push_back({wr.wr_id, slot, fetches ? length : 0});
  return wr.wr_id;
}

uint64_t HostSession::post_send(uint32_t qp_num, const std::string& data,
                                std::optional<uint32_t> imm, bool signaled, bool solicited,
                                std::optional<uint32_t> invalidate) {
  if (imm && invalidate) throw VerbsError("a SEND carries immediate data or an invalidate, not both", EINVAL);
  ib_send_wr wr;
  wr.send_flags = (signaled ? IB_SEND_SIGNALED : 0) | (solicited ? IB_SEND_SOLICITED : 0);
  if (imm) {
    wr.opcode = IB_WR_SEND_WITH_IMM;
    wr.ex.imm_data = __builtin_bswap32(*imm);
  } else if (invalidate) {
    wr.opcode = IB_WR_SEND_WITH_INV;
    wr.ex.invalidate_rkey = *invalidate;
  }
  return post(qp(qp_num), wr, data, uint32_t(data.size()));
}

BufferedQp& HostSession::window_owner(uint32_t qp_num, uint32_t window_slot, uint64_t length) {
  BufferedQp& owner = *qp(qp_num).bq;
  if (window_slot >= owner.window_slots() || length > owner.slot_bytes())
    throw VerbsError("window slot " + std::to_string(window_slot) + " of QP " +
                         std::to_string(qp_num) + " does not hold " + std::to_string(length) +
                         " bytes", EINVAL);
  return owner;
}

uint64_t HostSession::post_write(uint32_t qp_num, const std::string& data, uint32_t window_slot,
                                 std::optional<uint32_t> imm, bool signaled) {
  Qp& q = qp(qp_num);
  ib_send_wr wr;
  wr.opcode = imm ? IB_WR_RDMA_WRITE_WITH_IMM : IB_WR_RDMA_WRITE;
  if (imm) wr.ex.imm_data = __builtin_bswap32(*imm);
  wr.send_flags = signaled ? IB_SEND_SIGNALED : 0;
  wr.remote_addr = window_owner(q.peer, window_slot, data.size()).window_addr(window_slot);
  return post(q, wr, data, uint32_t(data.size()));
}

uint64_t HostSession::post_read(uint32_t qp_num, uint32_t length, uint32_t window_slot,
                                bool signaled) {
  Qp& q = qp(qp_num);
  ib_send_wr wr;
  wr.opcode = IB_WR_RDMA_READ;
  wr.send_flags = signaled ? IB_SEND_SIGNALED : 0;
  wr.remote_addr = window_owner(q.peer, window_slot, length).window_addr(window_slot);
  return post(q, wr, "", length);
}

uint64_t HostSession::post_atomic(uint32_t qp_num, uint32_t window_slot,
                                  std::optional<uint64_t> fetch_add,
                                  std::optional<std::pair<uint64_t, uint64_t>> compare_swap,
                                  bool signaled) {
  if (bool(fetch_add) == bool(compare_swap))
    throw VerbsError("an atomic is a fetch-and-add or a compare-and-swap", EINVAL);
  Qp& q = qp(qp_num);
  ib_send_wr wr;
  wr.opcode = fetch_add ? IB_WR_ATOMIC_FETCH_AND_ADD : IB_WR_ATOMIC_CMP_AND_SWP;
  wr.compare_add = fetch_add ? *fetch_add : compare_swap->first;
  wr.swap = compare_swap ? compare_swap->second : 0;
  wr.send_flags = signaled ? IB_SEND_SIGNALED : 0;
  wr.remote_addr = window_owner(q.peer, window_slot, 8).window_addr(window_slot);
  return post(q, wr, "", 8);
}

void HostSession::inject_fault(uint32_t qp_num, uint64_t nth, uint16_t flush_minor) {
  const Qp& q = qp(qp_num);
  if (flush_minor < 1 || flush_minor >= kFlushCodeNames.size())
    throw VerbsError("flush code " + std::to_string(flush_minor) + " is not one of spec G.5's (1 to " +
                         std::to_string(kFlushCodeNames.size() - 1) + ")", EINVAL);
  if (nth < q.requests)
    throw VerbsError("request " + std::to_string(nth) + " of QP " + std::to_string(qp_num) + " is posted already (" +
                         std::to_string(q.requests) + " so far): a fault can name a later one", EINVAL);
  backends::DeviceBackdoor* backdoor = host_->backdoor();
  if (!backdoor) throw VerbsError("faults on request need a device with a backdoor, and this one has none", EOPNOTSUPP);
  if (!backdoor->inject_fault(qp_num, nth, flush_minor))
    throw VerbsError("the device has no QP " + std::to_string(qp_num) + ", or carried out its request " +
                         std::to_string(nth) + " already", EINVAL);
}

std::string HostSession::window(uint32_t qp_num, uint32_t window_slot, uint32_t length) {
  const uint8_t* p = window_owner(qp_num, window_slot, length).window_slot(window_slot);
  return std::string(reinterpret_cast<const char*>(p), length);
}

void HostSession::set_window(uint32_t qp_num, uint32_t window_slot, const std::string& data) {
  std::memcpy(window_owner(qp_num, window_slot, data.size()).window_slot(window_slot), data.data(),
              data.size());
}

uint64_t HostSession::post_recv(uint32_t qp_num) {
  Qp& q = qp(qp_num);
  const uint32_t slot = q.rq.take(qp_num, "receive");
  const ib_sge sge = q.bq->recv_sge(slot);
  ib_recv_wr wr;
  wr.wr_id = next_wr_id_++;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  int ret = 0;
  host_->run_on_host([&] { ret = host_->driver().post_recv(q.bq->qp(), &wr, nullptr); });
  if (ret) q.rq.free.push_back(slot);
  check(ret, "post_recv");
  q.rq.posted.push_back({wr.wr_id, slot});
  return wr.wr_id;
}

std::vector<PolledCompletion> HostSession::poll(uint32_t cq_num, int max_entries) {
  ib_cq* c = cq(cq_num);
  std::vector<ib_wc> wcs(size_t(std::max(max_entries, 0)));
  int n = 0;
  host_->run_on_host([&] { n = ib_poll_cq(c, int(wcs.size()), wcs.data()); });
  check(n, "ib_poll_cq");
  std::vector<PolledCompletion> out;
  completions_delivered_ += uint64_t(std::max(n, 0));
  for (int i = 0; i < n; i++) {
    const ib_wc& wc = wcs[i];
    PolledCompletion pc{wc.wr_id, cq_num, wc.qp ? wc.qp->qp_num : 0, wc, {}};
    // A successful completion carries the bytes its slot received; either way the slot, and
    // those of the unsignaled sends it retires, are free again.
    auto it = qps_.find(pc.qp_num);
    if (it != qps_.end()) {
      Qp& q = it->second;
      const bool recv = wc.opcode & IB_WC_RECV;
      const std::optional<Posted> done = (recv ? q.rq : q.sq).retire(wc.wr_id);
      if (done && wc.status == IB_WC_SUCCESS && (recv || done->fetched)) {
        const uint8_t* at = recv ? q.bq->recv_slot(done->slot) : q.bq->send_slot(done->slot);
        pc.data.assign(reinterpret_cast<const char*>(at),
                       recv ? std::min(wc.byte_len, q.bq->slot_bytes()) : done->fetched);
      }
    }
    out.push_back(std::move(pc));
  }
  return out;
}

void HostSession::run_for_ns(uint64_t ns) {
  host_->run_on_host([&] { host_->driver().hw().exec.delay_ns(ns); });
}

uint64_t HostSession::now_ps() const { return host_->now_ps(); }

// report.json's names for what the device and the driver count (a run's workload counts
// are its own: posted, torn down, checked).
std::map<std::string, uint64_t> HostSession::counters() const {
  const HostCounters host = host_->host_counters();
  // What the driver was told of the device, whatever the backend.
  const irdma::irdma_event_counters ev = host_->driver().event_counters();
  std::map<std::string, uint64_t> out{{"sim_time_ps", host_->now_ps()},
                                      {"dma_errors", host.dma_errors},
                                      {"completions_delivered", completions_delivered_},
                                      {"cq_errors", ev.cq_errors},
                                      {"cqes_cleaned", ev.cqes_cleaned},
                                      {"ceqes_left", ev.ceqes_left},
                                      {"cqes_left", ev.cqes_left},
                                      {"ceqes_consumed", ev.ceqes},
                                      {"stale_ceqes", ev.stale_ceqes},
                                      {"stale_cq_errors", ev.stale_cq_errors},
                                      {"qp_errors", ev.qp_errors},
                                      {"stale_qp_errors", ev.stale_qp_errors},
                                      {"comp_events", ev.comp_events},
                                      {"missed_interrupts_recovered", ev.missed_interrupts},
                                      {"pci_errors", ev.pci_errors},
                                      {"function_resets_found", ev.resets_on_function_lost},
                                      {"device_resets_requested", ev.resets_requested},
                                      {"device_resets_on_cqp_timeout", ev.resets_on_cqp_timeout},
                                      {"device_resets_on_pci_error", ev.resets_on_pci_error}};
  // With a backdoor, the device's own counts too.
  backends::DeviceBackdoor* backdoor = host_->backdoor();
  if (!backdoor) return out;
  const backends::DeviceCounters d = backdoor->counters();
  out.insert({{"cqes_written", d.cqes_written - d.ccq_cqes},
              {"extended_cqes", d.extended_cqes},
              {"ccq_cqes", d.ccq_cqes},
              {"flush_cqes", d.flush_cqes},
              {"qps_in_error", d.qps_in_error},
              {"cqes_overflowed", d.cqes_overflowed},
              {"cqs_overflowed", d.cq_overflows},
              {"cqes_refused", d.cqes_refused},
              {"aeqes", d.aeqes},
              {"ud_dropped", d.ud_dropped},
              {"ceqes_dropped", d.ceqes_dropped},
              {"device_wqes_executed", d.wqes_executed},
              {"messages", d.messages},
              {"bytes_moved", d.bytes_moved},
              {"rnr_stalls", d.rnr_stalls},
              {"wqe_errors", d.wqe_errors},
              {"bad_doorbells", d.bad_sq_doorbells},
              {"cqp_commands", d.cqp_commands},
              {"cqp_hung", d.cqp_hung},
              {"mmio_writes", d.mmio_writes},
              {"mmio_reads", d.mmio_reads},
              {"cq_arms", d.cq_arm_doorbells},
              {"arms_taken", d.arms_taken},
              {"stale_arms", d.stale_arms},
              {"ceqes", d.ceqes},
              {"cqacks", d.cqacks},
              {"interrupts_raised", d.interrupts_raised},
              {"interrupts_moderated", d.interrupts_moderated},
              {"events_while_masked", d.events_while_masked},
              {"dma_blocked", d.dma_blocked},
              {"wqe_reads_failed", d.wqe_reads_failed},
              {"shadow_reads_failed", d.shadow_reads_failed},
              {"cqe_writes_failed", d.cqe_writes_failed},
              {"ceqe_writes_failed", d.ceqe_writes_failed},
              {"aeqe_writes_failed", d.aeqe_writes_failed},
              {"payload_writes_poisoned", d.payload_writes_poisoned},
              {"wqe_fetch_errors", d.wqe_fetch_errors},
              {"cqs_catastrophic", d.cq_catastrophic},
              {"bad_mmio", d.bad_mmio},
              {"function_resets", d.function_resets},
              {"mmio_refused_in_reset", d.mmio_refused_in_reset}});
  out["dma_errors"] += d.dma_errors;
  return out;
}

// Everything is torn down even when a step fails; the first failure is returned.
std::pair<int, std::string> HostSession::tear_down() {
  int first_error = 0;
  std::string failed;
  const auto note = [&](int ret, const std::string& what) {
    if (ret && !first_error) {
      first_error = ret;
      failed = what;
    }
  };
  host_->run_on_host([&] {
    for (auto& [num, q] : qps_) note(q.bq->destroy(), "destroying QP " + std::to_string(num));
    for (auto& [num, c] : cqs_)
      note(cq_events_[num].own ? ib_free_cq(c) : ib_cq_pool_put(c, c->cqe_used),
           "returning CQ " + std::to_string(num));
    note(host_->driver().remove() ? -EBUSY : 0, "freeing the CQ pool");
  });
  qps_.clear();
  cqs_.clear();
  cq_events_.clear();
  pool_gets_.clear();
  return {first_error, failed};
}

void HostSession::shutdown() {
  if (down_) return;
  const auto [err, failed] = tear_down();
  down_ = true;
  host_->close_trace();  // throws when a write of the trace failed
  check(err, failed);
}

void HostSession::recover() {
  if (down_) throw VerbsError("recover: the session was shut down", EINVAL);
  const auto [err, failed] = tear_down();
  down_ = err != 0;
  check(err, failed);
  if (const int ret = host_->reprobe()) {
    down_ = true;
    const std::string why = ret == -EBUSY    ? "objects made through the raw verbs are still held"
                            : ret == -ENODEV ? "the function did not come back from its reset"
                                             : host_->driver().probe_error();
    throw VerbsError("probing the driver again failed: " + why + " (errno " + std::to_string(-ret) + ")", -ret);
  }
}

}  // namespace irdma_sim::testbench
