// The run's expectation model: what every posted work request must produce, built from
// the scenario as the workload posts (never read back from the driver), compared field by
// field with every ib_wc the driver delivers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "driver/core/ib_verbs.h"
#include "model/testbench/fifo.h"

namespace irdma_sim::testbench {

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
  // A successful CQE may still map to an error status: the kernel has no ib_wc opcode for
  // BIND_MW or a signaled NOP (IB_WC_GENERAL_ERR, vendor_err 0).
  ibcore::ib_wc_status status = ibcore::IB_WC_SUCCESS;
  bool silent_on_flush = false;  // a NOP: a flush skips it
  uint64_t seq = 0;        // a send's number on its QP
  bool signaled = true;    // an unsignaled send completes only when flushed
};

class Scoreboard {
 public:
  explicit Scoreboard(size_t qps) : qps_(qps) {}
  // A run that compares no payload (traffic.check_payload false) reports no verdict on it.
  void payloads_unchecked() { payloads_checked_ = false; }

  // A send posted on QP `qp`. An unsignaled one completes only if a flush reports it; a
  // signaled completion retires the unsignaled ones before it.
  void expect_send(unsigned qp, const ExpectedCompletion& send) { qps_[qp].sends.push_back(send); }
  // A message QP `qp` will receive, signaled or not at its sender (lost once its RQ is in
  // error).
  void expect_message(unsigned qp, const ExpectedCompletion& message) {
    if (!qps_[qp].state.rq_error) qps_[qp].messages.push_back(message);
  }
  // Request `request` of QP `qp` fails with flush code `minor`: from the oldest send not
  // yet retired, the first reports that code and the rest a general flush, and no
  // signaled send lies between that one and the request. Its receives flush too.
  void expect_fault(unsigned qp, uint64_t request, uint16_t minor);
  // The device could not fetch QP `qp`'s SQ at request `request` and put the QP in error
  // with `minor` (FLUSH_FATAL_ERR). As expect_fault, but its SQ may have held nothing then:
  // what is posted after is flushed in software, a general flush first; and with nothing
  // outstanding, nothing need be reported.
  void expect_fetch_fault(unsigned qp, uint64_t request, uint16_t minor) {
    expect_fault(qp, request, minor);
    qps_[qp].state.fetch_fault = true;
  }
  // QP `qp`'s peer is faulted: its queues may flush (retries exceeded, or moved to error
  // by the workload).
  void expect_peer_fault(unsigned qp) { qps_[qp].state.peer_faulted = true; }
  // Data one of QP `qp`'s completions reports was poisoned on its way and never landed:
  // from now on a completion of it whose data differs is no failure, but counted
  // (poisoned_payloads_delivered: work reported done whose data is not there).
  void expect_poisoned_payload(unsigned qp) { qps_[qp].state.payload_poisoned = true; }
  // A half of a CQE on QP `qp`'s CQ never landed (refused). In a 64-byte slot the other
  // half may be read with it: an extended half last written two passes before carries the
  // current valid bit, and neither the driver nor irdma can tell it stale. From now on a
  // completion of the QP whose immediate data or UD source fields differ is no failure,
  // but counted (stale_extended_delivered).
  void expect_stale_extended(unsigned qp) { qps_[qp].state.stale_extended = true; }
  // QP `qp` was torn down: nothing more is expected of it, and what it still delivers (a
  // drain's) is not checked.
  void abandon(unsigned qp) {
    PerQp& q = qps_[qp];
    q.sends.clear();
    q.recvs.clear();
    q.messages.clear();
    q.state.abandoned = true;
  }
  // A receive posted on QP `qp` (`ibqp`).
  void expect_recv(unsigned qp, uint64_t wr_id, const ibcore::ib_qp* ibqp) {
    qps_[qp].recvs.push_back({wr_id, ibqp});
  }

  // `payload_ok`: what an RDMA WRITE wrote or a READ read is what it should be.
  void check_send(unsigned qp, const ibcore::ib_wc& wc, bool payload_ok = true);
  // `payload_ok`: the receive buffer holds the bytes that were sent.
  void check_recv(unsigned qp, const ibcore::ib_wc& wc, bool payload_ok);

  // A named invariant the system checked on its own.
  void record(const std::string& name, bool passed, const std::string& detail);

  std::vector<Check> checks() const;
  uint64_t completions_checked() const { return checked_; }
  uint64_t poisoned_payloads_delivered() const { return poisoned_delivered_; }
  uint64_t stale_extended_delivered() const { return stale_extended_delivered_; }
  size_t outstanding_sends() const;
  size_t undelivered_messages() const;

 private:
  void fail(const std::string& check, const std::string& detail);
  // A successful completion's data is not what was sent: a failure, unless poisoned.
  void payload_differs(unsigned qp, const std::string& detail);
  // `qp`: whose completion it is.
  void compare(unsigned qp, const char* what, const ExpectedCompletion& e, const ibcore::ib_wc& wc);
  struct QpState {
    bool faulted = false;
    uint64_t fault_request = 0;
    uint16_t fault_minor = 0;
    bool fetch_fault = false;
    bool peer_faulted = false;
    bool sq_error = false;  // the SQ reported its first error
    bool rq_error = false;
    bool abandoned = false;
    bool payload_poisoned = false;
    bool stale_extended = false;
  };
  // An error completion of QP `qp`'s SQ (`sq`) or RQ for `e`.
  void check_error(unsigned qp, bool sq, const ExpectedCompletion& e, const ibcore::ib_wc& wc);

  struct PostedRecv {
    uint64_t wr_id;
    const ibcore::ib_qp* qp;
  };
  // What a completion of the QP looks at, together: its SQ's sends, its posted receives,
  // the messages on their way to them.
  struct PerQp {
    Fifo<ExpectedCompletion> sends;
    Fifo<PostedRecv> recvs;
    Fifo<ExpectedCompletion> messages;
    QpState state;
  };
  std::vector<PerQp> qps_;
  bool payloads_checked_ = true;
  struct Failures {
    uint64_t count = 0;
    std::string first;
  };
  std::map<std::string, Failures> failures_;
  std::vector<Check> recorded_;
  uint64_t checked_ = 0;
  uint64_t poisoned_delivered_ = 0;
  uint64_t stale_extended_delivered_ = 0;
};

}  // namespace irdma_sim::testbench
