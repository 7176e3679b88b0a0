#include "model/system/workload.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <deque>

#include "driver/core/cq.h"
#include "driver/core/cq_pool.h"
#include "model/system/buffered_qp.h"
#include "driver/irdma/irdmadv.h"
#include "model/system/host.h"

namespace irdma_sim::system {

using namespace ibcore;

namespace {

constexpr uint64_t kStallNs = 50'000'000;  // no progress for this long: the run is stuck
constexpr uint64_t kWaitSliceNs = 100'000;  // the posting thread's longest sleep

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The bytes of message `key`: regenerated on receipt instead of stored.
void fill_payload(uint8_t* dst, uint32_t len, uint64_t key) {
  uint32_t off = 0;
  for (; off + 8 <= len; off += 8) {
    const uint64_t word = splitmix64(key + off);
    std::memcpy(dst + off, &word, 8);
  }
  if (off < len) {
    const uint64_t word = splitmix64(key + off);
    std::memcpy(dst + off, &word, len - off);
  }
}

bool payload_equals(const uint8_t* buf, uint32_t len, uint64_t key) {
  uint64_t diff = 0;
  uint32_t off = 0;
  for (; off + 8 <= len; off += 8) {
    uint64_t word;
    std::memcpy(&word, buf + off, 8);
    diff |= word ^ splitmix64(key + off);
  }
  if (off < len) {
    uint64_t word = 0, want = splitmix64(key + off);
    std::memcpy(&word, buf + off, len - off);
    diff |= (word ^ want) & (~0ull >> (8 * (8 - (len - off))));
  }
  return diff == 0;
}

uint64_t payload_key(uint64_t seed, unsigned qp_index, uint64_t seq) {
  return splitmix64(seed * 31 + qp_index) ^ (seq << 20);
}

bool consumes_receive(TrafficOp op) { return op == TrafficOp::send || op == TrafficOp::write_imm; }

// How many of the first `n` work requests of the op cycle are `kind`.
template <typename Kind>
uint64_t count_ops(const std::vector<TrafficOp>& ops, uint64_t n, Kind kind) {
  uint64_t per_cycle = 0, rest = 0;
  for (size_t i = 0; i < ops.size(); i++) {
    per_cycle += kind(ops[i]);
    if (i < n % ops.size()) rest += kind(ops[i]);
  }
  return n / ops.size() * per_cycle + rest;
}

// The bytes a QP's window offers to READs: fixed at setup, one key per slot.
uint64_t read_source_key(uint64_t seed, unsigned owner, uint32_t slot) {
  return splitmix64(seed ^ 0x5EAD) + (uint64_t(owner) << 48) + (uint64_t(slot) << 24);
}

}  // namespace

struct Workload::WrCtx {
  ib_cqe cqe;  // first: ib_wc::wr_cqe points here
  Workload* wl = nullptr;
  Qp* qp = nullptr;
  uint64_t wr_id = 0;
  uint32_t slot = 0;
  uint64_t seq = 0;  // the send's number on its QP
  TrafficOp op = TrafficOp::send;
  uint32_t len = 0;
  uint64_t original = 0, after = 0;  // atomics: the value returned, the value left behind
};

// A message on its way to a QP's receive queue: a SEND or a WRITE with immediate data.
struct Workload::Incoming {
  uint64_t seq;  // its number at the sender
  TrafficOp op;
  uint32_t len;
};

struct Workload::Qp {
  unsigned index = 0;
  Qp* peer = nullptr;
  const std::vector<TrafficOp>* ops = nullptr;  // its op cycle
  bool ud = false;
  uint32_t qkey = 0;  // UD: what this QP accepts
  std::unique_ptr<BufferedQp> bq;
  ib_cq* cq = nullptr;
  uint32_t nr_cqe = 0;
  std::vector<WrCtx> send_ctx, recv_ctx;
  std::deque<Incoming> incoming;
  // Of those, the WRITE_WITH_IMMs (their numbers at the sender): their bytes are checked in
  // this QP's window when their receive completes, so the sender writes no other message
  // over them until then.
  std::deque<uint64_t> writes_to_check;
  bool rq_error = false;  // a receive completed in error: nothing on its way arrives any more
  std::vector<uint64_t> atomic_values;  // of the peer's atomic slots, as this QP leaves them
  uint64_t sends_total = 0, sends_posted = 0, sends_done = 0;
  uint64_t recvs_total = 0, recvs_posted = 0, recvs_done = 0;
  // An error completion broke the connection: the workload moves the peer to error too,
  // as a ULP tearing the connection down does.
  bool broken = false, peer_flushed = false;
  uint64_t idle_until_ns = 0;  // after a burst (traffic.burst)
  bool own_cq = false;         // ib_alloc_cq'd, not from the pool
  bool cq_error = false, torn_down = false;  // its CQ reported IB_EVENT_CQ_ERR; the pair is gone
  uint64_t completions = 0, resized_at = 0;  // completions seen, and at the last resize
  size_t resizes = 0;
  // A region over the peer's window and a window over that region, when the ops use them;
  // `rkey` is what RDMA requests name: the window, the region, or the global key 0.
  irdma::irdma_mr* mr = nullptr;
  irdma::irdma_mw* mw = nullptr;
  bool mr_registered = false;
  uint32_t rkey = 0;
};

Workload::Workload(Host& host, const Scenario& sc, Scoreboard& sb, CompletionLog& log)
    : host_(host), dev_(host.driver()), sc_(sc), sb_(sb), log_(log) {}

Workload::~Workload() = default;

uint32_t Workload::message_size(const Qp& qp, uint64_t seq) const {
  const TrafficSpec& t = sc_.traffic;
  const uint64_t span = uint64_t(t.max_bytes) - t.min_bytes + 1;
  return t.min_bytes + uint32_t(splitmix64(sc_.seed ^ (uint64_t(qp.index) << 40) ^ seq) % span);
}

void Workload::run() {
  completed_ = dev_.hw().exec.make_event();
  uint64_t warnings = 0;
  std::string first_warning;
  dev_.warnings.sink = [&](const std::string& w) {
    if (warnings++ == 0) first_warning = w;
  };
  if (setup()) traffic();
  teardown();
  sb_.record("no_driver_warnings", warnings == 0,
             warnings ? std::to_string(warnings) + " warning(s); first: " + first_warning
                      : "ib-core raised no warnings");
  dev_.warnings.sink = nullptr;
}

bool Workload::setup() {
  dev_.pool_policy = sc_.pool_policy;
  if (sc_.traffic.resize_every) {
    std::vector<std::string> pooled;
    for (const QpPairSpec& pair : sc_.pairs)
      if (!pair.own_cqs) pooled.push_back(pair.name);
    if (!pooled.empty()) {
      std::string names;
      for (size_t i = 0; i < std::min<size_t>(pooled.size(), 4); i++) names += (i ? ", " : "") + pooled[i];
      if (pooled.size() > 4) names += " and " + std::to_string(pooled.size() - 4) + " more";
      warnings_.push_back("traffic.resize_every: " + std::to_string(pooled.size()) + " pair(s) have pool CQs, which "
                          "cannot be resized (" + names + "): only pairs with cq: own resize");
    }
  }
  const uint32_t slot_bytes = BufferedQp::slot_bytes_for(sc_.traffic.max_bytes);
  for (const QpPairSpec& pair : sc_.pairs) {
    for (int side = 0; side < 2; side++) {
      auto q = std::make_unique<Qp>();
      q->index = unsigned(qps_.size());
      q->ops = &sc_.ops_of(size_t(&pair - sc_.pairs.data()));
      q->sends_total = sc_.traffic.sends_per_qp;
      q->nr_cqe = pair.cq_entries ? pair.cq_entries : pair.sq_depth + pair.rq_depth;
      const ib_poll_context ctx = sc_.poll_ctx_of(size_t(&pair - sc_.pairs.data()));
      q->own_cq = pair.own_cqs;
      auto cq = q->own_cq ? ib_alloc_cq(&dev_, nullptr, int(q->nr_cqe), unsigned(std::max(pair.cq_vector, 0)), ctx)
                          : ib_cq_pool_get(&dev_, q->nr_cqe, pair.cq_vector, ctx);
      if (cq.is_err()) {
        if (out_of(cq.err(), "config.device.max_cq", sc_.config.device.max_cq,
                   pair.name + ": allocating its CQs"))
          return false;
        sb_.record("setup", false,
                   pair.name + ": allocating a CQ of " + std::to_string(q->nr_cqe) + " entries (" +
                       (pair.cq_entries ? "cq_entries" : "sq_depth + rq_depth") + ") on vector " +
                       std::to_string(pair.cq_vector) + " failed, errno " + std::to_string(-cq.err()) +
                       "; the device caps CQs at config.device.max_cqe = " +
                       std::to_string(sc_.config.device.max_cqe));
        return false;
      }
      q->cq = cq.get();
      if (std::find(cqs_.begin(), cqs_.end(), q->cq) == cqs_.end()) cqs_.push_back(q->cq);
      q->cq->event_handler = [this](const ib_event& ev) { cq_error(ev); };
      int err = 0;
      q->ud = pair.ud;
      q->qkey = 0x1000 + unsigned(qps_.size());
      q->bq.reset(BufferedQp::create(dev_, q->cq, pair.sq_depth, pair.rq_depth, slot_bytes, err,
                                     pair.ud ? IB_QPT_UD : IB_QPT_RC));
      q->send_ctx.resize(pair.sq_depth);
      q->atomic_values.assign(pair.sq_depth, 0);  // DMA memory starts zeroed
      q->recv_ctx.resize(pair.rq_depth);
      qps_.push_back(std::move(q));
      if (err) {
        if (!out_of(err, "config.device.max_qp", sc_.config.device.max_qp, pair.name + ": creating its QPs"))
          sb_.record("setup", false, pair.name + ": creating a QP failed, errno " + std::to_string(-err));
        return false;
      }
    }
    Qp& a = *qps_[qps_.size() - 2];
    Qp& b = *qps_[qps_.size() - 1];
    a.peer = &b;
    b.peer = &a;
    const bool connected = pair.ud ? !dev_.connect_qp(a.bq->qp(), 0, a.qkey) &&
                                         !dev_.connect_qp(b.bq->qp(), 0, b.qkey)
                                   : !dev_.connect_qp(a.bq->qp(), b.bq->qp_num()) &&
                                         !dev_.connect_qp(b.bq->qp(), a.bq->qp_num());
    if (!connected) {
      sb_.record("setup", false, pair.name + ": connecting the QP pair failed");
      return false;
    }
  }
  for (auto& q : qps_)
    if (!make_keys(*q)) return false;
  inject_faults();
  counters_.pool_cqs = 0;
  for (const auto& pool : dev_.cq_pools) counters_.pool_cqs += pool.size();
  for (auto& q : qps_) {
    q->recvs_total = count_ops(*q->peer->ops, q->peer->sends_total, consumes_receive);
    const BufferedQp& bq = *q->bq;
    for (uint32_t slot = 0; slot < bq.sq_depth(); slot++)  // the second half serves READs
      fill_payload(bq.window_slot(bq.sq_depth() + slot), bq.slot_bytes(),
                   read_source_key(sc_.seed, q->index, slot));
  }
  for (auto& q : qps_) {
    const uint64_t initial = std::min<uint64_t>(q->bq->rq_depth(), q->recvs_total);
    for (uint64_t i = 0; i < initial; i++)
      if (post_recv(*q)) return false;
  }
  sb_.record("setup", true,
             std::to_string(qps_.size()) + " QPs on " + std::to_string(cqs_.size()) +
                 " pool CQ(s); the pool holds " + std::to_string(counters_.pool_cqs));
  return true;
}

bool Workload::out_of(int err, const char* key, uint64_t limit, const std::string& what) {
  if (err == -ENOSPC) {
    limit_error_ = std::string(key) + " = " + std::to_string(limit) + " is used up: " + what +
                   " failed with ENOSPC (every id the device has is taken)";
  } else if (err == -ENOMEM) {
    limit_error_ = "config.host.memory_mb = " + std::to_string(sc_.config.host.memory_mb) +
                   " is used up: " + what + " failed with ENOMEM (the driver's rings and the workload's buffers need more)";
  } else {
    return false;
  }
  return true;
}

// Registers the scenario's faults with the device and the expectation model. A fault by
// rate fails each request with that probability: the first that fails is drawn from the
// seed (geometrically), and may lie beyond the QP's last request.
void Workload::inject_faults() {
  for (const FaultSpec& f : sc_.faults) {
    Qp& q = *qps_[2 * f.pair + f.side];
    uint64_t request = uint64_t(f.request);
    if (f.request < 0) {
      const double u = double(splitmix64(sc_.seed ^ 0xFA17 ^ (uint64_t(q.index) << 32)) >> 11) * 0x1p-53;
      const double n = f.rate >= 1   ? 0
                       : f.rate <= 0 ? HUGE_VAL
                                     : std::floor(std::log1p(-u) / std::log1p(-f.rate));
      request = n < double(q.sends_total) ? uint64_t(n) : q.sends_total;
    }
    counters_.faults.push_back({q.bq->qp_num(), request, f.flush_code});
    if (request >= q.sends_total) {
      char rate[32];
      std::snprintf(rate, sizeof rate, "%g", f.rate);
      warnings_.push_back("the fault on pair " + sc_.pairs[f.pair].name + " side " + (f.side ? "b" : "a") + " at rate " +
                          rate + " drew none of its QP's " + std::to_string(q.sends_total) +
                          " requests: nothing was injected");
      continue;
    }
    host_.backdoor()->inject_fault(q.bq->qp_num(), request, f.flush_code);
    sb_.expect_fault(q.index, request, f.flush_code);
    sb_.expect_peer_fault(q.peer->index);
  }
}

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

int Workload::post_recv(Qp& q) {
  const uint32_t slot = uint32_t(q.recvs_posted % q.bq->rq_depth());
  WrCtx& ctx = q.recv_ctx[slot];
  ctx = {{&Workload::on_recv_done}, this, &q, next_wr_id_++, slot};
  const ib_sge sge = q.bq->recv_sge(slot);
  ib_recv_wr wr;
  wr.wr_cqe = &ctx.cqe;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  if (int ret = dev_.post_recv(q.bq->qp(), &wr, nullptr)) {
    post_failed("post_recv", ret);
    return ret;
  }
  sb_.expect_recv(q.index, ctx.wr_id, q.bq->qp());
  q.recvs_posted++;
  counters_.recvs_posted++;
  return 0;
}

// What work request `seq` of `q` is on the wire (its opcode, immediate, invalidate, remote
// buffer, UD destination, atomic operands) and what it must complete as, at `q` and at the
// receiver; atomics also move the model of the peer's atomic slots on.
void Workload::describe(Qp& q, uint64_t seq, TrafficOp op, WrCtx& ctx, ib_send_wr& wr,
                        ib_sge& sge, ExpectedCompletion& done, ExpectedCompletion& msg) {
  const uint32_t len = ctx.len;
  const uint64_t wr_id = ctx.wr_id;
  const TrafficSpec& t = sc_.traffic;
  const BufferedQp& bq = *q.bq;
  const BufferedQp& peer = *q.peer->bq;
  const uint32_t slot = uint32_t(seq % bq.sq_depth());
  done = {wr_id, bq.qp(), bq.qp_num(), IB_WC_SEND, len};
  msg = {0, peer.qp(), peer.qp_num(), IB_WC_RECV, len};
  if (q.ud) {
    const device::DeviceConfig& d = sc_.config.device;
    wr.remote_qpn = peer.qp_num();
    wr.remote_qkey = q.peer->qkey;
    msg.qp_num = bq.qp_num();  // a UD receive names its source QP
    msg.grh = done.grh = true;
    msg.network_hdr_type = done.network_hdr_type = d.ud_ipv4 ? RDMA_NETWORK_IPV4 : RDMA_NETWORK_IPV6;
    msg.with_smac = true;
    msg.smac = d.mac;
    msg.vlan_tci = d.ud_vlan_tci;
  }
  switch (op) {
    case TrafficOp::send:
      if (t.imm_every && seq % t.imm_every == t.imm_every - 1) {
        msg.with_imm = true;
        msg.imm_data = uint32_t(splitmix64(seq ^ sc_.seed));
        wr.opcode = IB_WR_SEND_WITH_IMM;
        wr.ex.imm_data = __builtin_bswap32(msg.imm_data);  // htonl
      } else if (t.inv_every && !q.ud && seq % t.inv_every == t.inv_every - 1) {  // RC only
        msg.with_inv = true;
        msg.inv_rkey = uint32_t(splitmix64(seq * 3 + sc_.seed)) | 1;
        wr.opcode = IB_WR_SEND_WITH_INV;
        wr.ex.invalidate_rkey = msg.inv_rkey;
      }
      break;
    case TrafficOp::write_imm:
      msg.opcode = IB_WC_RECV_RDMA_WITH_IMM;
      msg.with_imm = true;
      msg.imm_data = uint32_t(splitmix64(seq ^ sc_.seed ^ 0x1D));
      wr.ex.imm_data = __builtin_bswap32(msg.imm_data);
      [[fallthrough]];
    case TrafficOp::write:
      wr.opcode = op == TrafficOp::write ? IB_WR_RDMA_WRITE : IB_WR_RDMA_WRITE_WITH_IMM;
      wr.remote_addr = peer.window_addr(slot);  // the first half takes WRITEs
      wr.rkey = q.rkey;
      done.opcode = IB_WC_RDMA_WRITE;
      break;
    case TrafficOp::read:
    case TrafficOp::read_inv:
      wr.opcode = IB_WR_RDMA_READ;
      wr.remote_addr = peer.window_addr(peer.sq_depth() + slot);
      wr.rkey = q.rkey;
      done.opcode = IB_WC_RDMA_READ;
      if (op == TrafficOp::read_inv) {
        // The sink names the QP's region, which the READ invalidates as it lands.
        wr.opcode = IB_WR_RDMA_READ_WITH_INV;
        sge.lkey = q.mr_registered ? q.mr->lkey : 0;
        forget_region(q);
      }
      break;
    case TrafficOp::fetch_add:
    case TrafficOp::cmp_swap: {
      uint64_t& value = q.atomic_values[slot];
      ctx.original = value;
      if (op == TrafficOp::fetch_add) {
        wr.opcode = IB_WR_ATOMIC_FETCH_AND_ADD;
        wr.compare_add = splitmix64(seq + sc_.seed) >> 40;
        value += wr.compare_add;
        done.opcode = IB_WC_FETCH_ADD;
      } else {
        wr.opcode = IB_WR_ATOMIC_CMP_AND_SWP;
        wr.compare_add = seq % 3 ? value : value + 1;  // two in three match
        wr.swap = splitmix64(seq ^ sc_.seed);
        if (wr.compare_add == value) value = wr.swap;
        done.opcode = IB_WC_COMP_SWAP;
      }
      ctx.after = value;
      wr.remote_addr = peer.window_addr(2 * peer.sq_depth() + slot);
      wr.rkey = q.rkey;
      done.byte_len = 0;  // irdma tracks no length for atomics
      break;
    }
    case TrafficOp::local_inv:
      // The QP's region when it is registered; else a key the device never issued (an
      // index beyond its STags), which it ignores.
      wr.opcode = IB_WR_LOCAL_INV;
      wr.ex.invalidate_rkey = q.mr_registered ? q.mr->rkey : uint32_t(splitmix64(seq + 77)) | 0x80000000u;
      forget_region(q);
      wr.num_sge = 0;
      done.opcode = IB_WC_LOCAL_INV;
      done.byte_len = 0;
      break;
    case TrafficOp::reg_mr: {
      const uint32_t key = (q.mr->rkey & ~0xFFu) | ((q.mr->rkey + 1) & 0xFFu);  // ib_update_fast_reg_key
      q.mr->lkey = q.mr->rkey = key;
      wr.opcode = IB_WR_REG_MR;
      wr.reg.mr = q.mr;
      wr.reg.key = key;
      wr.reg.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ |
                      IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_MW_BIND;
      wr.num_sge = 0;
      q.mr_registered = true;
      q.rkey = key;
      done.opcode = IB_WC_REG_MR;
      done.byte_len = 0;
      break;
    }
    case TrafficOp::bind_mw: {
      const uint32_t key = (q.mw->rkey & ~0xFFu) | ((q.mw->rkey + 1) & 0xFFu);  // ibv_inc_rkey
      q.mw->rkey = key;
      wr.opcode = IB_WR_BIND_MW;
      wr.bind.mw = q.mw;
      wr.bind.mr = q.mr;
      wr.bind.rkey = key;
      wr.bind.addr = q.mr->iova;
      wr.bind.length = q.mr->length;
      wr.bind.access = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC;
      wr.num_sge = 0;
      q.rkey = key;
      done.status = IB_WC_GENERAL_ERR;  // the kernel's mapping has no BIND_MW opcode
      done.byte_len = 0;
      break;
    }
    case TrafficOp::nop:
      done.status = IB_WC_GENERAL_ERR;  // nor one for a signaled NOP
      done.byte_len = 0;
      done.silent_on_flush = true;
      break;
  }
}

void Workload::forget_region(Qp& q) {
  q.mr_registered = false;
  q.rkey = 0;
}

// How many more work requests `q` may post now: its SQ slots hold what is not yet retired,
// and a message goes into window slot seq % sq_depth only once the peer checked the
// WRITE_WITH_IMM that landed there sq_depth messages before.
uint64_t Workload::room(const Qp& q) const {
  const uint64_t depth = q.bq->sq_depth();
  const uint64_t free = depth - (q.sends_posted - q.sends_done);
  const auto& unchecked = q.peer->writes_to_check;
  return unchecked.empty() ? free : std::min(free, unchecked.front() + depth - q.sends_posted);
}

// A doorbell carries a whole batch: a QP posts once that much of it fits, unless fewer
// sends than that are left.
bool Workload::batch_fits(const Qp& q) const {
  const uint64_t left = q.sends_total - q.sends_posted;
  return left && room(q) >= std::min<uint64_t>({sc_.traffic.batch, q.bq->sq_depth(), left});
}

int Workload::post_sends(Qp& q) {
  const TrafficSpec& t = sc_.traffic;
  const BufferedQp& bq = *q.bq;
  if (!batch_fits(q) || dev_.hw().exec.now_ns() < q.idle_until_ns) return 0;
  int posted = 0;
  while (uint32_t(posted) < t.batch && q.sends_posted < q.sends_total && room(q)) {
    const TrafficOp op = (*q.ops)[q.sends_posted % q.ops->size()];
    // A datagram with no receive posted for it is dropped: a UD sender waits for credit.
    const Qp& to = *q.peer;
    if (q.ud && to.recvs_posted <= to.recvs_done + to.incoming.size()) break;
    const uint64_t seq = q.sends_posted++;
    const uint32_t slot = uint32_t(seq % bq.sq_depth());
    const bool atomic = op == TrafficOp::fetch_add || op == TrafficOp::cmp_swap;
    const uint32_t len = atomic ? 8 : message_size(q, seq);
    const bool fetches = op == TrafficOp::read || op == TrafficOp::read_inv || atomic;
    if (!fetches) fill_payload(bq.send_slot(slot), len, payload_key(sc_.seed, q.index, seq));
    WrCtx& ctx = q.send_ctx[slot];
    ctx = {{&Workload::on_send_done}, this, &q, next_wr_id_++, slot, seq, op, len};

    ib_send_wr wr;
    wr.wr_cqe = &ctx.cqe;
    sge_scratch_.push_back(bq.send_sge(slot, len));
    wr.num_sge = 1;
    // Every signal_every-th WR is signaled, and so is one that fills the SQ or ends the
    // run: only a signaled completion retires the unsignaled WRs before it.
    const bool signaled = (seq + 1) % t.signal_every == 0 || q.sends_posted == q.sends_total ||
                          q.sends_posted - q.sends_done == bq.sq_depth();
    wr.send_flags = signaled ? IB_SEND_SIGNALED : 0;
    ExpectedCompletion done, msg;
    describe(q, seq, op, ctx, wr, sge_scratch_.back(), done, msg);
    if (consumes_receive(op)) {
      if (t.solicited_every && seq % t.solicited_every == t.solicited_every - 1)
        wr.send_flags |= IB_SEND_SOLICITED;
      sb_.expect_message(q.peer->index, msg);
      if (!q.peer->rq_error) {
        q.peer->incoming.push_back({seq, op, len});
        if (op == TrafficOp::write_imm) q.peer->writes_to_check.push_back(seq);
      }
    }
    done.seq = seq;
    done.signaled = signaled;
    sb_.expect_send(q.index, done);
    posted++;
    const bool burst_ends = t.burst && q.sends_posted % t.burst == 0;
    if (burst_ends) q.idle_until_ns = dev_.hw().exec.now_ns() + t.idle_gap_ns;
    if (op == TrafficOp::nop) {
      // No verb posts a NOP: the batch so far goes first, then the NOP on its own.
      sge_scratch_.pop_back();
      send_batch(q);
      if (int ret = dev_.post_nop(bq.qp(), wr.wr_id, signaled)) post_failed("post_nop", ret);
    } else {
      wr_scratch_.push_back(wr);
    }
    if (burst_ends) break;
  }
  send_batch(q);
  counters_.sends_posted += uint64_t(posted);
  return posted;
}

// Posts the work requests gathered so far in one post_send (one doorbell).
void Workload::send_batch(Qp& q) {
  std::vector<ib_send_wr>& wrs = wr_scratch_;
  if (wrs.empty()) return;
  for (size_t i = 0; i < wrs.size(); i++) {
    wrs[i].sg_list = &sge_scratch_[i];
    wrs[i].next = i + 1 < wrs.size() ? &wrs[i + 1] : nullptr;
  }
  const ib_send_wr* bad = nullptr;
  if (int ret = dev_.post_send(q.bq->qp(), wrs.data(), &bad)) post_failed("post_send", ret);
  counters_.doorbells++;
  wrs.clear();
  sge_scratch_.clear();
}

void Workload::post_failed(const char* verb, int ret) {
  counters_.post_errors++;
  sb_.record(verb, false, std::string(verb) + " failed, errno " + std::to_string(-ret));
}

void Workload::completed(const ib_cq* cq, const WrCtx& ctx, const ib_wc& wc) {
  counters_.completions++;
  if (wc.status < counters_.by_status.size()) counters_.by_status[wc.status]++;
  // The kernel has no ib_wc opcode for a BIND_MW or a signaled NOP: they complete as
  // IB_WC_GENERAL_ERR, flushed or not; before the QP broke, that was a success.
  const bool unmapped_success = (ctx.op == TrafficOp::bind_mw || ctx.op == TrafficOp::nop) &&
                                wc.status == IB_WC_GENERAL_ERR && !ctx.qp->broken;
  ctx.qp->completions++;
  if (wc.status != IB_WC_SUCCESS && !unmapped_success) {
    ctx.qp->broken = true;
    if (wc.vendor_err >> 16 == irdma::IRDMA_FLUSH_MAJOR_ERR) counters_.flushed++;
  }
  auto it = std::find_if(counters_.by_opcode.begin(), counters_.by_opcode.end(),
                         [&](const auto& p) { return p.first == wc.opcode; });
  if (it == counters_.by_opcode.end())
    counters_.by_opcode.emplace_back(wc.opcode, 1);
  else
    it->second++;
  irdma::irdmadv_cq dv;
  irdma::irdmadv_query_cq(cq, &dv);
  const uint32_t cq_num = dv.cq_num;
  if (cq_num >= delivered_on_.size()) delivered_on_.resize(cq_num + 1);
  if (!delivered_on_[cq_num]) {
    delivered_on_[cq_num] = true;
    counters_.cqs_with_completions++;
  }
  log_.write(host_.now_ps(), cq_num, ctx.wr_id, wc.qp ? wc.qp->qp_num : 0, wc);
}

void Workload::on_send_done(ib_cq* cq, ib_wc* wc) {
  const WrCtx& ctx = *reinterpret_cast<WrCtx*>(wc->wr_cqe);
  Workload& wl = *ctx.wl;
  Qp& q = *ctx.qp;
  ib_wc copy = *wc;
  copy.wr_id = ctx.wr_id;
  wl.completed(cq, ctx, copy);
  wl.sb_.check_send(q.index, copy, wc->status != IB_WC_SUCCESS || wl.moved_right(q, ctx));
  q.sends_done = ctx.seq + 1;  // it retires every unsignaled WR before it
  wl.wake_poster(q);
}

// The posting thread is woken only when it has something to do: a batch fits in the QP's
// SQ, the QP broke or needs a resize, a UD peer may have credit, or the run is over. Each
// wake is a context switch of the simulator's.
void Workload::wake_poster(const Qp& q) {
  const TrafficSpec& t = sc_.traffic;
  const bool resize_due = q.own_cq && t.resize_every && q.completions - q.resized_at >= t.resize_every;
  if ((q.bq && batch_fits(q)) || resize_due || q.broken || q.cq_error || q.ud || q.peer->ud || finished())
    completed_->signal();
}

// After a successful SQ completion: an RDMA WRITE's data is at the peer, a READ's is here,
// an atomic returned the original value and left the new one.
bool Workload::moved_right(const Qp& q, const WrCtx& ctx) const {
  const BufferedQp& peer = *q.peer->bq;
  switch (ctx.op) {
    case TrafficOp::send:       // checked at the receiver
    case TrafficOp::local_inv:  // moves no data
      return true;
    case TrafficOp::reg_mr:
    case TrafficOp::bind_mw:
    case TrafficOp::nop:
      return true;
    case TrafficOp::read:
    case TrafficOp::read_inv:
      return payload_equals(q.bq->send_slot(ctx.slot), ctx.len,
                            read_source_key(sc_.seed, q.peer->index, ctx.slot));
    case TrafficOp::write:
    case TrafficOp::write_imm:
      return payload_equals(peer.window_slot(ctx.slot), ctx.len,
                            payload_key(sc_.seed, q.index, ctx.seq));
    case TrafficOp::fetch_add:
    case TrafficOp::cmp_swap: {
      uint64_t returned, left;
      std::memcpy(&returned, q.bq->send_slot(ctx.slot), 8);
      std::memcpy(&left, peer.window_slot(2 * peer.sq_depth() + ctx.slot), 8);
      return returned == ctx.original && left == ctx.after;
    }
  }
  return false;
}

void Workload::on_recv_done(ib_cq* cq, ib_wc* wc) {
  const WrCtx& ctx = *reinterpret_cast<WrCtx*>(wc->wr_cqe);
  Workload& wl = *ctx.wl;
  Qp& q = *ctx.qp;
  ib_wc copy = *wc;
  copy.wr_id = ctx.wr_id;
  wl.completed(cq, ctx, copy);
  q.recvs_done++;
  bool payload_ok = true;
  if (wc->status != IB_WC_SUCCESS) {
    q.rq_error = true;
    q.incoming.clear();
    q.writes_to_check.clear();
  } else if (!q.incoming.empty()) {
    // A SEND's bytes are in the receive buffer, a WRITE's in this QP's window.
    const Incoming msg = q.incoming.front();
    q.incoming.pop_front();
    if (msg.op == TrafficOp::write_imm) q.writes_to_check.pop_front();
    const uint8_t* at = msg.op == TrafficOp::send
                            ? q.bq->recv_slot(ctx.slot)
                            : q.bq->window_slot(uint32_t(msg.seq % q.peer->bq->sq_depth()));
    const uint32_t len = std::min(wc->byte_len, q.bq->slot_bytes());
    payload_ok = payload_equals(at, len, payload_key(wl.sc_.seed, q.peer->index, msg.seq));
  }
  wl.sb_.check_recv(q.index, copy, payload_ok);
  if (q.recvs_posted < q.recvs_total && !q.torn_down) wl.post_recv(q);
  wl.wake_poster(q);
  if (q.peer->bq) wl.wake_poster(*q.peer);  // a window slot it waits for may be free
}

// Under traffic: a QP with a CQ of its own resizes it after every traffic.resize_every of
// its completions, to the sizes the scenario lists, in turn.
int Workload::maybe_resize(Qp& q) {
  const TrafficSpec& t = sc_.traffic;
  if (!q.own_cq || !t.resize_every || q.completions - q.resized_at < t.resize_every) return 0;
  q.resized_at = q.completions;
  const uint32_t cqe = t.resize_cqes[q.resizes++ % t.resize_cqes.size()];
  if (int ret = ib_resize_cq(q.cq, int(cqe)))
    sb_.record("resize_cq", false, "resizing a CQ to " + std::to_string(cqe) + " failed, errno " + std::to_string(-ret));
  counters_.cq_resizes++;
  return 1;
}

// IB_EVENT_CQ_ERR (the device overflowed the CQ): the QPs on it are done for. Called in the
// event's interrupt; the posting thread tears their pairs down.
void Workload::cq_error(const ib_event& ev) {
  if (ev.event != IB_EVENT_CQ_ERR) return;
  counters_.cq_errors++;
  for (auto& q : qps_)
    if (q->cq == ev.cq) q->cq_error = true;
  completed_->signal();
}

// The recovery a ULP makes of a CQ error: both QPs of the pair destroyed (their unpolled
// CQEs with them), their own CQs freed, what was still expected of them given up.
int Workload::tear_down_pair(Qp& q) {
  for (Qp* x : {&q, q.peer}) {
    x->torn_down = true;
    sb_.abandon(x->index);
    if (x->bq && x->bq->destroy())  // the device may still use its buffers: keep them
      sb_.record("tear_down_pair", false, "destroying a QP failed");
    else
      x->bq.reset();
    x->sends_done = x->sends_posted = x->sends_total;
    x->recvs_done = x->recvs_posted = x->recvs_total;
  }
  for (Qp* x : {&q, q.peer}) {
    if (!x->own_cq || !x->cq) continue;
    cqs_.erase(std::remove(cqs_.begin(), cqs_.end(), x->cq), cqs_.end());
    if (ib_free_cq(x->cq)) sb_.record("tear_down_pair", false, "freeing a CQ in error failed");
    x->cq = nullptr;
  }
  counters_.pairs_torn_down++;
  return 1;
}

int Workload::flush_peer(Qp& q) {
  q.peer_flushed = true;
  const int ret = dev_.flush_qp(q.peer->bq->qp());
  if (ret && ret != -EALREADY)
    sb_.record("flush_qp", false, "moving a QP to error failed, errno " + std::to_string(-ret));
  return 1;
}

bool Workload::finished() const {
  return std::all_of(qps_.begin(), qps_.end(), [](const auto& q) {
    return q->sends_done == q->sends_total && q->recvs_done == q->recvs_total;
  });
}

// The posting side: completions arrive through interrupts, on the pool CQs' poll context
// (softirq or workqueue workers), which call the workload's done callbacks; this thread
// posts what fits and sleeps until a completion wakes it.
void Workload::stop_traffic() {
  for (auto& q : qps_) {
    sb_.abandon(q->index);
    q->torn_down = true;
  }
  stopped_early_ = true;
}

void Workload::report_progress() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_progress_ < std::chrono::milliseconds(500)) return;
  last_progress_ = now;
  RunProgress p;
  p.sim_time_ps = host_.now_ps();
  p.completions = counters_.completions;
  for (const auto& q : qps_) {
    p.sends_posted += q->sends_posted;
    p.sends_total += q->sends_total;
  }
  p.wall_s = std::chrono::duration<double>(now - started_).count();
  control_.progress(p);
}

void Workload::traffic() {
  const uint64_t start = dev_.hw().exec.now_ns();
  const uint64_t stop = sc_.traffic.stop_after_ns;
  uint64_t last_progress = start, seen_completions = 0;
  started_ = last_progress_ = std::chrono::steady_clock::now();
  while (!finished()) {
    if (control_.stop && control_.stop()) {
      interrupted_ = true;
      interrupted_at_ps_ = host_.now_ps();
      stop_traffic();
      return;
    }
    if (control_.progress) report_progress();
    if (stop && dev_.hw().exec.now_ns() - start >= stop) {
      stop_traffic();
      sb_.record("no_stall", true, "stopped after " + std::to_string(stop) + " ns, as the scenario asks");
      return;
    }
    int progress = 0;
    for (auto& q : qps_) {
      if (q->torn_down) continue;
      if (q->cq_error) {
        progress += tear_down_pair(*q);
        continue;
      }
      if (q->broken && !q->peer_flushed) progress += flush_peer(*q);
      progress += maybe_resize(*q);
      progress += post_sends(*q);
    }
    const uint64_t now = dev_.hw().exec.now_ns();
    if (progress || counters_.completions != seen_completions) {
      seen_completions = counters_.completions;
      last_progress = now;
      if (progress) continue;
    }
    if (now - last_progress > kStallNs) {
      sb_.record("no_stall", false,
                 "no completion for " + std::to_string(kStallNs / 1000000) + " ms of simulated time");
      return;
    }
    counters_.idle_polls++;
    // Sleep until a completion, until the first QP idling after a burst may post again, or
    // for a slice: a long timeout a completion cuts short would stay in the simulator's
    // timed-event queue until it expires, and thousands of them slow every notification.
    uint64_t wake = now + kWaitSliceNs;
    for (const auto& q : qps_)
      if (q->idle_until_ns > now && q->sends_posted < q->sends_total) wake = std::min(wake, q->idle_until_ns);
    if (stop) wake = std::min(wake, start + stop);
    completed_->wait_for(wake - now);
  }
  if (stop)
    warnings_.push_back("traffic.stop_after_ns = " + std::to_string(stop) + ": the traffic finished after " +
                        std::to_string(dev_.hw().exec.now_ns() - start) + " ns, before it; nothing was stopped");
  sb_.record("no_stall", true, "traffic finished");
}

void Workload::teardown() {
  // Stopped with work in flight: every QP to error (FLUSH_WQES) and destroyed now, their
  // unpolled CQEs cleaned out of the rings; the drain below finds nothing to report.
  if (stopped_early_) {
    for (auto& q : qps_)
      if (q->bq) flush_peer(*q->peer);
    for (auto& q : qps_) {
      if (q->bq && q->bq->destroy())
        sb_.record("teardown_clean", false, "destroying a QP failed");
      else
        q->bq.reset();
    }
  }
  uint64_t left = 0;
  for (ib_cq* cq : cqs_) left += uint64_t(ib_process_cq_direct(cq, -1));  // what a stall left
  sb_.record("no_completion_left_in_rings", left == 0,
             left ? std::to_string(left) + " completion(s) were still in the rings" : "all rings drained");
  uint64_t& corrupt = counters_.corrupt_cqes;
  for (ib_cq* cq : cqs_) {
    irdma::irdmadv_cq stats;
    irdma::irdmadv_query_cq(cq, &stats);
    corrupt += stats.corrupt_cqes;
    counters_.retired_ring_completions += stats.retired_polled;
  }
  sb_.record("no_corrupt_cqes", corrupt == 0,
             std::to_string(corrupt) + " CQE(s) named an unknown QP or WQE index");

  bool clean = true;
  for (auto it = qps_.rbegin(); it != qps_.rend(); ++it) {
    Qp& q = **it;
    if (q.mw && dev_.dealloc_mw(q.mw)) clean = false;
    if (q.mr && dev_.dereg_mr(q.mr)) clean = false;
    q.mw = nullptr;
    q.mr = nullptr;
    if (q.bq && q.bq->destroy())
      clean = false;  // the device may still use its buffers: they stay
    else
      q.bq.reset();
    if (q.cq && (q.own_cq ? ib_free_cq(q.cq) : ib_cq_pool_put(q.cq, q.nr_cqe))) clean = false;
  }
  const size_t pool_before = counters_.pool_cqs;
  const int pool_after = dev_.remove();  // pool CQs still in use, kept
  sb_.record("teardown_clean", clean && pool_after == 0,
             "destroyed " + std::to_string(qps_.size()) + " QPs and " +
                 std::to_string(pool_before) + " pool CQs; " + std::to_string(pool_after) +
                 " pool CQ(s) left");
}

}  // namespace irdma_sim::system
