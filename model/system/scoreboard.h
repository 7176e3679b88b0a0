// The run's expectation model: what every posted work request must produce, built from
// the scenario as the workload posts (never read back from the driver), compared field by
// field with every ib_wc the driver delivers.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "driver/core/ib_verbs.h"

namespace irdma_sim::system {

struct Check {
  std::string name;
  bool passed;
  std::string detail;
};

struct ExpectedCompletion {
  uint64_t wr_id = 0;
  const ibcore::ib_qp* qp = nullptr;
  uint32_t qp_num = 0;
  ibcore::ib_wc_opcode opcode = ibcore::IB_WC_SEND;
  uint32_t byte_len = 0;
  bool with_imm = false;
  uint32_t imm_data = 0;  // host order
  bool with_inv = false;
  uint32_t inv_rkey = 0;
  // UD completions carry a GRH and the network header type; UD receives also the source
  // MAC and the VLAN tag.
  bool grh = false;
  uint8_t network_hdr_type = 0;
  bool with_smac = false;
  uint64_t smac = 0;  // 48 bits, first byte highest
  uint16_t vlan_tci = 0;
};

class Scoreboard {
 public:
  explicit Scoreboard(size_t qps) : sq_(qps), rq_(qps), messages_(qps) {}

  // A signaled send posted on QP `qp` (unsignaled ones complete nothing).
  void expect_send(unsigned qp, const ExpectedCompletion& send) { sq_[qp].push_back(send); }
  // A message QP `qp` will receive, signaled or not at its sender.
  void expect_message(unsigned qp, const ExpectedCompletion& message) {
    messages_[qp].push_back(message);
  }
  // A receive posted on QP `qp`.
  void expect_recv(unsigned qp, uint64_t wr_id) { rq_[qp].push_back(wr_id); }

  // `payload_ok`: what an RDMA WRITE wrote or a READ read is what it should be.
  void check_send(unsigned qp, const ibcore::ib_wc& wc, bool payload_ok = true);
  // `payload_ok`: the receive buffer holds the bytes that were sent.
  void check_recv(unsigned qp, const ibcore::ib_wc& wc, bool payload_ok);

  // A named invariant the system checked on its own.
  void record(const std::string& name, bool passed, const std::string& detail);

  std::vector<Check> checks() const;
  uint64_t completions_checked() const { return checked_; }
  size_t outstanding_sends() const;
  size_t undelivered_messages() const;

 private:
  void fail(const std::string& check, const std::string& detail);
  void compare(const char* what, const ExpectedCompletion& e, const ibcore::ib_wc& wc);

  std::vector<std::deque<ExpectedCompletion>> sq_;
  std::vector<std::deque<uint64_t>> rq_;
  std::vector<std::deque<ExpectedCompletion>> messages_;
  struct Failures {
    uint64_t count = 0;
    std::string first;
  };
  std::map<std::string, Failures> failures_;
  std::vector<Check> recorded_;
  uint64_t checked_ = 0;
};

}  // namespace irdma_sim::system
