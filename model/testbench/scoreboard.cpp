#include "model/testbench/scoreboard.h"

#include <algorithm>
#include <iterator>

#include "driver/core/ib_qp.h"

namespace irdma_sim::testbench {

using namespace ibcore;

namespace {

constexpr const char* kOnce = "every_signaled_wr_completed_once";
constexpr const char* kMessages = "every_message_received_once_in_order";
constexpr const char* kStatus = "expected_status_and_opcode";
constexpr const char* kFields = "expected_byte_len_and_immediate";
constexpr const char* kQp = "completion_attributed_to_its_qp";
constexpr const char* kPayload = "payload_integrity";
constexpr const char* kErrors = "error_completions_as_injected";

// What a flush code reports (spec G.5), kept here apart from the driver's table.
ib_wc_status flush_status(uint16_t minor) {
  static const ib_wc_status table[] = {
      IB_WC_FATAL_ERR,      IB_WC_WR_FLUSH_ERR,   IB_WC_LOC_PROT_ERR,    IB_WC_REM_ACCESS_ERR,
      IB_WC_LOC_QP_OP_ERR,  IB_WC_REM_OP_ERR,     IB_WC_LOC_LEN_ERR,     IB_WC_FATAL_ERR,
      IB_WC_RETRY_EXC_ERR,  IB_WC_MW_BIND_ERR,    IB_WC_REM_INV_REQ_ERR, IB_WC_RNR_RETRY_EXC_ERR};
  return minor < std::size(table) ? table[minor] : IB_WC_FATAL_ERR;
}

constexpr uint16_t kFlushMajor = 1, kGeneralFlush = 1, kRetryExceeded = 8;

std::string wr(uint64_t id) { return "wr_id " + std::to_string(id); }

}  // namespace

void Scoreboard::fail(const std::string& check, const std::string& detail) {
  Failures& f = failures_[check];
  if (f.count++ == 0) f.first = detail;
}

void Scoreboard::compare(unsigned qp, const char* what, const ExpectedCompletion& e, const ib_wc& wc) {
  // Messages are built only for failures: this runs for every completion.
  const auto id = [&] { return std::string(what) + " " + wr(e.wr_id); };
  if (wc.status != e.status)
    fail(kStatus, id() + ": status " + std::to_string(wc.status) + ", expected " +
                      std::to_string(e.status) + " (vendor_err " + std::to_string(wc.vendor_err) + ")");
  else if (e.status == IB_WC_SUCCESS && wc.opcode != e.opcode)
    fail(kStatus, id() + ": opcode " + std::to_string(wc.opcode) + ", expected " +
                      std::to_string(e.opcode));
  if (wc.byte_len != e.byte_len)
    fail(kFields, id() + ": byte_len " + std::to_string(wc.byte_len) + ", expected " +
                      std::to_string(e.byte_len));
  const uint16_t vid = e.vlan_tci & 0x0FFF;
  const int want = (e.with_imm ? IB_WC_WITH_IMM : 0) | (e.with_inv ? IB_WC_WITH_INVALIDATE : 0) |
                   (e.grh ? IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE : 0) |
                   (e.with_smac ? IB_WC_WITH_SMAC : 0) | (e.with_smac && vid ? IB_WC_WITH_VLAN : 0);
  // A 64-byte slot's extended half carries the immediate data, the UD source fields and the
  // valid bits that say they are there (qword 7).
  constexpr int kExtendedFlags = IB_WC_WITH_IMM | IB_WC_WITH_SMAC | IB_WC_WITH_VLAN;
  std::string extended;  // the first way the extended half's fields differ
  if ((wc.wc_flags ^ want) & ~kExtendedFlags)
    fail(kFields, id() + ": wc_flags " + std::to_string(wc.wc_flags) + ", expected " + std::to_string(want));
  else if (wc.wc_flags != want)
    extended = id() + ": wc_flags " + std::to_string(wc.wc_flags) + ", expected " + std::to_string(want);
  if (extended.empty() && e.with_imm && __builtin_bswap32(wc.ex.imm_data) != e.imm_data)
    extended = id() + ": immediate data differs from what was sent";
  if (e.with_inv && wc.ex.invalidate_rkey != e.inv_rkey)
    fail(kFields, id() + ": invalidated rkey differs from what was sent");
  if (e.grh && wc.network_hdr_type != e.network_hdr_type)
    fail(kFields, id() + ": network_hdr_type " + std::to_string(wc.network_hdr_type) + ", expected " +
                      std::to_string(e.network_hdr_type));
  if (extended.empty() && e.with_smac) {
    uint64_t smac = 0;
    for (uint8_t b : wc.smac) smac = smac << 8 | b;
    if (smac != e.smac || wc.sl != uint8_t(e.vlan_tci >> 13) || (vid && wc.vlan_id != vid))
      extended = id() + ": UD source MAC, VLAN or SL differ from the wire's";
  }
  if (!extended.empty()) {
    if (qps_[qp].state.stale_extended)
      stale_extended_delivered_++;  // once for the completion, however many fields differ
    else
      fail(kFields, extended);
  }
  if (wc.qp != e.qp)
    fail(kQp, id() + ": ib_wc.qp is not the QP the work request was posted on");
  else if (wc.src_qp != e.qp_num)
    fail(kQp, id() + ": src_qp " + std::to_string(wc.src_qp) + ", expected " +
                  std::to_string(e.qp_num));
}

void Scoreboard::expect_fault(unsigned qp, uint64_t request, uint16_t minor) {
  QpState& st = qps_[qp].state;
  st.faulted = true;
  st.fault_request = request;
  st.fault_minor = minor;
}

void Scoreboard::check_send(unsigned qp, const ib_wc& wc, bool payload_ok) {
  PerQp& pq = qps_[qp];
  if (pq.state.abandoned) return;
  checked_++;
  Fifo<ExpectedCompletion>& q = pq.sends;
  size_t at = 0;
  while (at < q.size() && q[at].wr_id != wc.wr_id) at++;
  // vendor_err means nothing on a success (the kernel leaves it stale): the status the
  // send expects tells a success from an error.
  const bool expected = at < q.size() && wc.status == q[at].status && !pq.state.sq_error;
  // An expected completion retires the unsignaled sends before it; an error reports them
  // all but NOPs, which a flush passes over.
  const auto skipped = [&](const ExpectedCompletion& x) { return expected ? !x.signaled : x.silent_on_flush; };
  bool in_order = at < q.size();
  for (size_t i = 0; in_order && i < at; ++i) in_order = skipped(q[i]);
  if (!in_order) {
    fail(kOnce, "send completion " + wr(wc.wr_id) + " on QP index " + std::to_string(qp) +
                    (q.empty() ? " with nothing outstanding"
                               : " out of order; expected " + wr(q.front().wr_id)));
    return;
  }
  const ExpectedCompletion e = q[at];
  q.pop_front(at + 1);
  if (!expected) {
    check_error(qp, true, e, wc);
    return;
  }
  compare(qp, "send", e, wc);
  if (!payload_ok) payload_differs(qp, "send " + wr(wc.wr_id) + ": the RDMA data moved is not what was expected");
}

// The first error of a queue carries the QP's flush code (an injected fault), retries
// exceeded (its peer went away) or a general flush (the workload moved it to error); every
// later completion is a general flush. Error completions say nothing of length or
// immediate data; the opcode of a flushed send is still the one posted.
void Scoreboard::check_error(unsigned qp, bool sq, const ExpectedCompletion& e, const ib_wc& wc) {
  PerQp& pq = qps_[qp];
  QpState& st = pq.state;
  bool& in_error = sq ? st.sq_error : st.rq_error;
  const std::string id = std::string(sq ? "send " : "receive ") + wr(e.wr_id) + " on QP index " +
                         std::to_string(qp);
  const uint16_t minor = uint16_t(wc.vendor_err & 0xFFFF);
  std::vector<uint16_t> allowed;  // flush codes this completion may carry
  if (in_error) {
    allowed = {kGeneralFlush};
  } else {
    in_error = true;
    if (!sq) pq.messages.clear();  // what had not arrived never will
    if (st.peer_faulted) allowed = {kRetryExceeded, kGeneralFlush};
    // A peer's fault may break the QP before its own fault strikes: then where its own
    // would have struck is not known.
    const bool own_fault_first = !st.peer_faulted;
    if (st.faulted) {
      // A receive queue empty at the fault has its later receives flushed in software.
      allowed.push_back(st.fault_minor);
      if (!sq || st.fetch_fault) allowed.push_back(kGeneralFlush);
    }
    if (st.faulted && own_fault_first) {
      if (sq && e.seq > st.fault_request)
        fail(kErrors, id + ": the first error comes after the faulted request " +
                          std::to_string(st.fault_request));
      bool signaled_before = false;
      for (size_t i = 0; sq && i < pq.sends.size(); ++i)
        signaled_before |= pq.sends[i].signaled && pq.sends[i].seq < st.fault_request;
      if (signaled_before)
        fail(kErrors, id + ": a signaled send before the faulted request was flushed");
    }
  }
  if (wc.status == IB_WC_SUCCESS) {
    fail(kErrors, id + ": succeeded after its queue reported an error");
    return;
  }
  const bool known = wc.vendor_err >> 16 == kFlushMajor &&
                     std::find(allowed.begin(), allowed.end(), minor) != allowed.end();
  // An operation ib_wc has no opcode for reports IB_WC_GENERAL_ERR, flushed or not.
  const ib_wc_status want = e.status == IB_WC_GENERAL_ERR ? IB_WC_GENERAL_ERR : flush_status(minor);
  if (!known || wc.status != want)
    fail(kErrors, id + ": status " + std::to_string(wc.status) + ", vendor_err " +
                      std::to_string(wc.vendor_err) +
                      (allowed.empty() ? " on a QP no fault touches" : " is not a flush this queue may report"));
  if (sq && wc.opcode != e.opcode)
    fail(kStatus, id + ": flushed with opcode " + std::to_string(wc.opcode) + ", expected " +
                      std::to_string(e.opcode));
  // irdma reports a RoCE UD completion's GRH and network header type whatever its status.
  const int flags = e.qp && e.qp->qp_type == IB_QPT_UD ? IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE : 0;
  if (wc.wc_flags != flags)
    fail(kFields, id + ": an error completion with wc_flags " + std::to_string(wc.wc_flags) + ", expected " +
                      std::to_string(flags));
  if (wc.qp != e.qp) fail(kQp, id + ": ib_wc.qp is not the QP the work request was posted on");
}

void Scoreboard::check_recv(unsigned qp, const ib_wc& wc, bool payload_ok) {
  PerQp& pq = qps_[qp];
  if (pq.state.abandoned) return;
  checked_++;
  Fifo<PostedRecv>& posted = pq.recvs;
  Fifo<ExpectedCompletion>& msgs = pq.messages;
  if (posted.empty() || posted.front().wr_id != wc.wr_id) {
    fail(kMessages, "receive completion " + wr(wc.wr_id) + " on QP index " + std::to_string(qp) +
                        (posted.empty() ? " with no receive posted" : " out of RQ order"));
    return;
  }
  const PostedRecv recv = posted.front();
  posted.pop_front();
  if (wc.status != IB_WC_SUCCESS || pq.state.rq_error) {
    ExpectedCompletion e;
    e.wr_id = recv.wr_id;
    e.qp = recv.qp;
    check_error(qp, false, e, wc);
    return;
  }
  if (msgs.empty()) {
    fail(kMessages, "receive " + wr(wc.wr_id) + " completed with no message sent to it");
    return;
  }
  ExpectedCompletion e = msgs.front();
  msgs.pop_front();
  e.wr_id = wc.wr_id;
  compare(qp, "receive", e, wc);
  if (!payload_ok) payload_differs(qp, "receive " + wr(wc.wr_id) + ": buffer differs from the bytes sent");
}

void Scoreboard::payload_differs(unsigned qp, const std::string& detail) {
  if (qps_[qp].state.payload_poisoned)
    poisoned_delivered_++;
  else
    fail(kPayload, detail);
}

void Scoreboard::record(const std::string& name, bool passed, const std::string& detail) {
  recorded_.push_back({name, passed, detail});
}

size_t Scoreboard::outstanding_sends() const {
  size_t n = 0;
  for (const PerQp& q : qps_)
    for (size_t i = 0; i < q.sends.size(); ++i) n += q.sends[i].signaled;
  return n;
}

size_t Scoreboard::undelivered_messages() const {
  size_t n = 0;
  for (const PerQp& q : qps_) n += q.messages.size();
  return n;
}

std::vector<Check> Scoreboard::checks() const {
  std::vector<Check> out;
  const auto verdict = [&](const char* name, std::string ok_detail, size_t leftover,
                           const std::string& leftover_what) {
    auto it = failures_.find(name);
    if (it != failures_.end()) {
      out.push_back({name, false, std::to_string(it->second.count) + " of " + std::to_string(checked_) +
                                      " completions failed it; first: " + it->second.first});
    } else if (leftover) {
      out.push_back({name, false, std::to_string(leftover) + " " + leftover_what});
    } else {
      out.push_back({name, true, std::move(ok_detail)});
    }
  };
  const std::string n = std::to_string(checked_) + " completions checked";
  verdict(kOnce, n, outstanding_sends(), "signaled send(s) never completed");
  verdict(kMessages, n, undelivered_messages(), "message(s) never received");
  verdict(kStatus, n, 0, "");
  verdict(kFields, n, 0, "");
  verdict(kQp, n, 0, "");
  if (payloads_checked_) verdict(kPayload, n, 0, "");
  size_t unseen = 0, faults = 0;
  for (const PerQp& q : qps_) {
    const QpState& st = q.state;
    faults += st.faulted;
    unseen += st.faulted && !st.sq_error && !st.abandoned && !st.fetch_fault;
  }
  verdict(kErrors, std::to_string(faults) + " injected fault(s), each reported as injected", unseen,
          "injected fault(s) never reported");
  out.insert(out.end(), recorded_.begin(), recorded_.end());
  return out;
}

}  // namespace irdma_sim::testbench
