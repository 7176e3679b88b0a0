#include "model/system/scoreboard.h"

#include <numeric>

namespace irdma_sim::system {

using namespace ibcore;

namespace {

constexpr const char* kOnce = "every_signaled_wr_completed_once";
constexpr const char* kMessages = "every_message_received_once_in_order";
constexpr const char* kStatus = "expected_status_and_opcode";
constexpr const char* kFields = "expected_byte_len_and_immediate";
constexpr const char* kQp = "completion_attributed_to_its_qp";
constexpr const char* kPayload = "payload_integrity";

std::string wr(uint64_t id) { return "wr_id " + std::to_string(id); }

}  // namespace

void Scoreboard::fail(const std::string& check, const std::string& detail) {
  Failures& f = failures_[check];
  if (f.count++ == 0) f.first = detail;
}

void Scoreboard::compare(const char* what, const ExpectedCompletion& e, const ib_wc& wc) {
  // Messages are built only for failures: this runs for every completion.
  const auto id = [&] { return std::string(what) + " " + wr(e.wr_id); };
  if (wc.status != IB_WC_SUCCESS)
    fail(kStatus, id() + ": status " + std::to_string(wc.status) + ", expected 0 (vendor_err " +
                      std::to_string(wc.vendor_err) + ")");
  else if (wc.opcode != e.opcode)
    fail(kStatus, id() + ": opcode " + std::to_string(wc.opcode) + ", expected " +
                      std::to_string(e.opcode));
  if (wc.byte_len != e.byte_len)
    fail(kFields, id() + ": byte_len " + std::to_string(wc.byte_len) + ", expected " +
                      std::to_string(e.byte_len));
  const uint16_t vid = e.vlan_tci & 0x0FFF;
  const int want = (e.with_imm ? IB_WC_WITH_IMM : 0) | (e.with_inv ? IB_WC_WITH_INVALIDATE : 0) |
                   (e.grh ? IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE : 0) |
                   (e.with_smac ? IB_WC_WITH_SMAC : 0) | (e.with_smac && vid ? IB_WC_WITH_VLAN : 0);
  if (wc.wc_flags != want)
    fail(kFields, id() + ": wc_flags " + std::to_string(wc.wc_flags) + ", expected " + std::to_string(want));
  if (e.with_imm && __builtin_bswap32(wc.ex.imm_data) != e.imm_data)
    fail(kFields, id() + ": immediate data differs from what was sent");
  if (e.with_inv && wc.ex.invalidate_rkey != e.inv_rkey)
    fail(kFields, id() + ": invalidated rkey differs from what was sent");
  if (e.grh && wc.network_hdr_type != e.network_hdr_type)
    fail(kFields, id() + ": network_hdr_type " + std::to_string(wc.network_hdr_type) + ", expected " +
                      std::to_string(e.network_hdr_type));
  if (e.with_smac) {
    uint64_t smac = 0;
    for (uint8_t b : wc.smac) smac = smac << 8 | b;
    if (smac != e.smac || wc.sl != uint8_t(e.vlan_tci >> 13) || (vid && wc.vlan_id != vid))
      fail(kFields, id() + ": UD source MAC, VLAN or SL differ from the wire's");
  }
  if (wc.qp != e.qp)
    fail(kQp, id() + ": ib_wc.qp is not the QP the work request was posted on");
  else if (wc.src_qp != e.qp_num)
    fail(kQp, id() + ": src_qp " + std::to_string(wc.src_qp) + ", expected " +
                  std::to_string(e.qp_num));
}

void Scoreboard::check_send(unsigned qp, const ib_wc& wc, bool payload_ok) {
  checked_++;
  auto& q = sq_[qp];
  if (q.empty() || q.front().wr_id != wc.wr_id) {
    fail(kOnce, "send completion " + wr(wc.wr_id) + " on QP index " + std::to_string(qp) +
                    (q.empty() ? " with nothing outstanding"
                               : " out of order; expected " + wr(q.front().wr_id)));
    return;
  }
  compare("send", q.front(), wc);
  q.pop_front();
  if (!payload_ok) fail(kPayload, "send " + wr(wc.wr_id) + ": the RDMA data moved is not what was expected");
}

void Scoreboard::check_recv(unsigned qp, const ib_wc& wc, bool payload_ok) {
  checked_++;
  auto& posted = rq_[qp];
  auto& msgs = messages_[qp];
  if (posted.empty() || posted.front() != wc.wr_id) {
    fail(kMessages, "receive completion " + wr(wc.wr_id) + " on QP index " + std::to_string(qp) +
                        (posted.empty() ? " with no receive posted" : " out of RQ order"));
    return;
  }
  posted.pop_front();
  if (msgs.empty()) {
    fail(kMessages, "receive " + wr(wc.wr_id) + " completed with no message sent to it");
    return;
  }
  ExpectedCompletion e = msgs.front();
  msgs.pop_front();
  e.wr_id = wc.wr_id;
  compare("receive", e, wc);
  if (!payload_ok) fail(kPayload, "receive " + wr(wc.wr_id) + ": buffer differs from the bytes sent");
}

void Scoreboard::record(const std::string& name, bool passed, const std::string& detail) {
  recorded_.push_back({name, passed, detail});
}

size_t Scoreboard::outstanding_sends() const {
  return std::accumulate(sq_.begin(), sq_.end(), size_t(0),
                         [](size_t n, const auto& q) { return n + q.size(); });
}

size_t Scoreboard::undelivered_messages() const {
  return std::accumulate(messages_.begin(), messages_.end(), size_t(0),
                         [](size_t n, const auto& q) { return n + q.size(); });
}

std::vector<Check> Scoreboard::checks() const {
  std::vector<Check> out;
  const auto verdict = [&](const char* name, std::string ok_detail, size_t leftover,
                           const std::string& leftover_what) {
    auto it = failures_.find(name);
    if (it != failures_.end()) {
      out.push_back({name, false, std::to_string(it->second.count) + " failure(s); first: " +
                                      it->second.first});
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
  verdict(kPayload, n, 0, "");
  out.insert(out.end(), recorded_.begin(), recorded_.end());
  return out;
}

}  // namespace irdma_sim::system
