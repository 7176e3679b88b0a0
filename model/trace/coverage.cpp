#include "model/trace/coverage.h"

#include <stdexcept>
#include <string>

namespace irdma_sim::trace {
namespace {

// Every (value of `axis0` in `values0`, value of `axis1` in `values1`) of a two-axis group.
std::vector<CoverUnreachable> pairs(std::initializer_list<int> values0, std::initializer_list<int> values1,
                                    const char* why) {
  std::vector<CoverUnreachable> out;
  for (int a : values0)
    for (int b : values1) out.push_back({{a, b}, why});
  return out;
}

std::vector<CoverUnreachable> join(std::vector<CoverUnreachable> a, const std::vector<CoverUnreachable>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

constexpr const char* kNoFaultedBindOrNop =
    "a faulted pair cannot post bind_mw or nop (BIND_MW's success and its flush both complete as "
    "IB_WC_GENERAL_ERR, a flushed NOP completes silently), and nothing else fails them";

std::array<CoverGroup, kCoverGroups> make_groups() {
  std::array<CoverGroup, kCoverGroups> g;
  g[size_t(Cover::sq_completion)] = {
      "sq_completion",
      "a send-queue work request's completion: its verb (the workload's operation), whether it was "
      "signaled, and its status (flushed: IB_WC_WR_FLUSH_ERR)",
      false,
      {{"op", {"send", "write", "write_imm", "read", "fetch_add", "cmp_swap", "local_inv", "reg_mr", "bind_mw",
               "read_inv", "nop"}},
       {"signaled", {"signaled", "unsignaled"}},
       {"status", {"success", "flushed", "error"}}},
      join({{{-1, 1, 0}, "an unsignaled work request that succeeds completes nothing"}},
           {{{8, -1, 1}, kNoFaultedBindOrNop}, {{8, -1, 2}, kNoFaultedBindOrNop},
            {{10, -1, 1}, kNoFaultedBindOrNop}, {{10, -1, 2}, kNoFaultedBindOrNop}})};
  g[size_t(Cover::rq_completion)] = {
      "rq_completion",
      "a receive's completion: what it received (IB_WC_RECV, with immediate data or an invalidated "
      "rkey, or IB_WC_RECV_RDMA_WITH_IMM) and its status",
      false,
      {{"kind", {"recv", "recv_imm", "recv_inv", "recv_rdma_imm"}}, {"status", {"success", "flushed", "error"}}},
      pairs({1, 2, 3}, {1, 2},
            "a failed receive's completion carries no immediate data or invalidated rkey: it counts as recv")};
  g[size_t(Cover::wc_status)] = {
      "wc_status",
      "every status the irdma driver reports in an ib_wc (its flush codes, G.5, mapped as irdma maps them), "
      "per device generation (GEN_2 expands one flush CQE per queue, GEN_3 writes one per WQE)",
      false,
      {{"status", {"success", "wr_flush_err", "loc_len_err", "loc_qp_op_err", "loc_prot_err", "mw_bind_err",
                   "rem_inv_req_err", "rem_access_err", "rem_op_err", "retry_exc_err", "rnr_retry_exc_err",
                   "fatal_err", "general_err"}},
       {"generation", {"gen2", "gen3"}}},
      pairs({12}, {0, 1},
            "IB_WC_GENERAL_ERR comes only from a CQE whose opcode irdma cannot map: corrupt rings (cq_fuzz_test), "
            "not scenarios")};
  g[size_t(Cover::pool_get)] = {
      "pool_get",
      "ib_cq_pool_get: the pool's policy, the vector hint, and whether a CQ was found or the pool grew",
      false,
      {{"policy", {"least_used", "kernel_first_fit"}}, {"hint", {"any", "vector"}}, {"result", {"found", "grew"}}},
      {}};
  g[size_t(Cover::driver_path)] = {
      "driver_path",
      "the driver's paths a run took: a re-poll after an arm said a completion may have been missed "
      "(REPORT_MISSED_EVENTS), completions polled from rings a resize retired, completions the flush path "
      "made (flush CQEs expanded, or the software flush), an IB_EVENT_CQ_ERR handled, a destroyed QP's "
      "unpolled CQEs cleaned from its CQ",
      false,
      {{"path", {"missed_event_repoll", "retired_ring_polled", "flush_completion", "cq_error_handled",
                 "cqes_cleaned_at_destroy"}}},
      {}};
  g[size_t(Cover::cqe_write)] = {
      "cqe_write",
      "a CQE the device wrote: its size, whether it has an extended half, and where it fell in the ring "
      "(its last half in the ring's last slot; a 32-byte extended CQE's halves split across the wrap)",
      true,
      {{"size", {"32B", "64B"}}, {"kind", {"plain", "extended"}}, {"place", {"mid_ring", "ends_ring", "split_across_wrap"}}},
      {{{1, -1, 2}, "a 64-byte CQE holds both halves in one slot"},
       {{-1, 0, 2}, "a plain CQE is one half"}}};
  g[size_t(Cover::cq_ring)] = {
      "cq_ring",
      "what happened to a CQ's ring: a wrap (the valid polarity flips), a re-read of the driver's head "
      "from the shadow area, a CQE dropped because the ring was full (overflow)",
      true,
      {{"event", {"wrap", "head_read", "overflow"}}},
      {}};
  g[size_t(Cover::cq_resize)] = {
      "cq_resize",
      "MODIFY_CQ: whether the ring grew, shrank or kept its size",
      true,
      {{"direction", {"grow", "shrink", "same"}}},
      {}};
  g[size_t(Cover::cq_arm)] = {
      "cq_arm",
      "an arm doorbell: for the next completion or the next solicited one, and what came of it (armed; "
      "an event at once for CQEs not yet consumed; an event at a later CQE; a repeat of the last arm, "
      "ignored)",
      true,
      {{"kind", {"next", "solicited"}}, {"outcome", {"armed", "event_at_arm", "event_at_cqe", "repeat"}}},
      join({{{1, 1}, "an arm for the next solicited completion does not fire for CQEs already written"}},
           pairs({1}, {0, 2, 3},
                 "the kernel's poll contexts arm for the next completion only: solicited arms come from a "
                 "consumer with its own completion channel (events_test), not from scenarios"))};
  g[size_t(Cover::ceq)] = {
      "ceq",
      "CEQs and their interrupts: a CEQE written, a CEQ's ring wrapping, a CEQE dropped because the CEQ "
      "was full of unacknowledged ones, an MSI-X raised, one held back by moderation",
      true,
      {{"event", {"ceqe", "wrap", "dropped", "msix", "moderated"}}},
      {{{2}, "the driver sizes every CEQ for all the CQs on it and acknowledges as it drains, so a CEQ never "
             "fills: a full one needs a consumer that stops acknowledging (ceq tests)"}}};
  g[size_t(Cover::cqp_command)] = {
      "cqp_command",
      "control QP commands and whether the device completed them with an error",
      true,
      {{"command", {"create_qp", "modify_qp", "destroy_qp", "create_cq", "modify_cq", "destroy_cq", "alloc_stag",
                    "dealloc_stag", "query_rdma_features", "create_ceq", "destroy_ceq", "create_aeq",
                    "destroy_aeq", "update_pe_sds", "query_fpm_val", "commit_fpm_val", "flush_wqes", "other"}},
       {"result", {"ok", "error"}}},
      join(pairs({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {1},
                 "the driver issues only commands the device accepts: errors are driven by cqp_test, not by "
                 "scenarios"),
           pairs({17}, {0, 1}, "the driver sends no other command"))};
  return g;
}

}  // namespace

size_t CoverGroup::bins() const {
  size_t n = 1;
  for (const CoverAxis& a : axes) n *= a.values.size();
  return n;
}

std::vector<unsigned> CoverGroup::values_of(size_t index) const {
  std::vector<unsigned> at(axes.size());
  for (size_t i = axes.size(); i-- > 0;) {
    at[i] = unsigned(index % axes[i].values.size());
    index /= axes[i].values.size();
  }
  return at;
}

const char* CoverGroup::unreachable_because(size_t index) const {
  const std::vector<unsigned> at = values_of(index);
  for (const CoverUnreachable& u : unreachable) {
    bool match = true;
    for (size_t i = 0; i < at.size() && match; i++) match = u.bin[i] < 0 || unsigned(u.bin[i]) == at[i];
    if (match) return u.why;
  }
  return nullptr;
}

bool CoverGroup::reachable(size_t index) const { return !unreachable_because(index); }

const std::array<CoverGroup, kCoverGroups>& cover_groups() {
  static const std::array<CoverGroup, kCoverGroups> groups = make_groups();
  return groups;
}

const CoverGroup& cover_group(Cover g) { return cover_groups()[size_t(g)]; }

Coverage::Coverage() {
  for (size_t g = 0; g < kCoverGroups; g++) {
    const CoverGroup& group = cover_groups()[g];
    if (group.axes.size() > kMaxAxes) throw std::logic_error(std::string("coverage ") + group.name + ": too many axes");
    shapes_[g] = {group.name, group.axes.size(), {}};
    for (size_t a = 0; a < group.axes.size(); a++) shapes_[g].sizes[a] = uint32_t(group.axes[a].values.size());
    hits_[g].assign(group.bins(), 0);
  }
}

void Coverage::hit(Cover g, std::initializer_list<unsigned> at, uint64_t times) {
  const Shape& shape = shapes_[size_t(g)];
  if (at.size() != shape.axes)
    throw std::logic_error(std::string("coverage ") + shape.name + ": a hit needs a value per axis");
  size_t index = 0, axis = 0;
  for (unsigned v : at) {
    const uint32_t n = shape.sizes[axis];
    if (v >= n)
      throw std::logic_error(std::string("coverage ") + shape.name + ": value " + std::to_string(v) + " past axis " +
                             cover_group(g).axes[axis].name);
    index = index * n + v;
    axis++;
  }
  hits_[size_t(g)][index] += times;
}

void Coverage::add(const Coverage& other) {
  for (size_t g = 0; g < kCoverGroups; g++)
    for (size_t b = 0; b < hits_[g].size(); b++) hits_[g][b] += other.hits_[g][b];
}

}  // namespace irdma_sim::trace
