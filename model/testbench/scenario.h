// A scenario: the system's configuration, what the driver sets up (pool CQs, loopback QP
// pairs), the traffic to run, and what must hold at the end. Loaded from YAML strictly
// (scenarios/README.md, "The format").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "driver/core/ib_device.h"
#include "model/testbench/sim_config.h"

namespace irdma_sim::testbench {

// What a QP posts, cycled through. reg_mr, bind_mw, local_inv and read_inv work on the
// QP's own memory region over its peer's buffers (scenarios/README.md, "The format").
enum class TrafficOp {
  send, write, write_imm, read, fetch_add, cmp_swap, local_inv, reg_mr, bind_mw, read_inv, nop
};

struct QpPairSpec {
  std::string name;
  int cq_vector = -1;        // ib_cq_pool_get hint (or ib_alloc_cq's vector) for the first QP's CQ
  int peer_cq_vector = -1;   // the same for the second QP's CQ (peer_cq_vector, else cq_vector)
  int vector_of(int side) const { return side == 0 ? cq_vector : peer_cq_vector; }
  uint32_t sq_depth = 64;    // send WRs per QP
  uint32_t rq_depth = 64;    // receive WRs per QP
  bool ud = false;           // unreliable datagram: SENDs only, addressed per WR
  std::vector<TrafficOp> ops;  // this pair's op cycle; empty: traffic.ops
  int poll_ctx = -1;           // its pool CQs' poll context; -1: pool.poll_ctx
  bool own_cqs = false;        // each QP allocates a CQ of its own (ib_alloc_cq), not from the pool
  uint32_t cq_entries = 0;     // what an own CQ asks for; 0: sq_depth + rq_depth (less: a ULP bug)
};

// An injected fault (spec G.5): one request of one QP fails with a flush code, so the QP
// moves to error and its queues flush. The request is named, or drawn per request with
// probability `rate` from the seed (the first that fails is the fault).
struct FaultSpec {
  size_t pair = 0;           // index into Scenario::pairs
  unsigned side = 0;         // 0: the pair's first QP, 1: its second
  int64_t request = -1;      // the failing request's number on the QP, from 0; or -1
  double rate = 0;           // used when request is -1
  uint16_t flush_code = 1;   // enum irdma_flush_opcode
};


struct TrafficSpec {
  uint32_t sends_per_qp = 1000;  // each QP of a pair posts this many SQ work requests
  std::vector<TrafficOp> ops = {TrafficOp::send};  // cycled through by each QP
  uint32_t min_bytes = 1;
  uint32_t max_bytes = 4096;
  uint32_t imm_every = 0;        // every Nth send carries immediate data (0: none)
  uint32_t inv_every = 0;        // every Nth RC send without immediate is SEND_WITH_INV
  uint32_t solicited_every = 0;  // every Nth send is solicited (0: none)
  uint32_t batch = 4;            // WRs posted per doorbell (fewer only at the end)
  uint32_t signal_every = 1;     // every Nth send is signaled (and the one filling the SQ)
  uint32_t burst = 0;            // a QP posts this many WRs, then idles (0: no idling)
  uint64_t stop_after_ns = 0;    // stop then and tear everything down with work in flight (0: run out)
  uint64_t stall_timeout_ns = 0; // no completion this long is a stall (0: the host's own limit)
  uint32_t resize_every = 0;     // a QP with its own CQ resizes it after this many completions
  std::vector<uint32_t> resize_cqes;  // to these sizes, in turn
  uint64_t idle_gap_ns = 0;      // for this long
  // Payloads generated and every byte delivered compared; off, completions are still matched
  // against their work requests (QP, wr_id, opcode, length, status) and atomics' values.
  bool check_payload = true;
};

struct Scenario {
  std::string file;
  std::string name;
  std::string description;
  uint64_t seed = 1;
  SimConfig config;
  ibcore::cq_pool_policy pool_policy = ibcore::cq_pool_policy::least_used;
  ibcore::ib_poll_context poll_ctx = ibcore::IB_POLL_SOFTIRQ;
  std::vector<QpPairSpec> pairs;
  TrafficSpec traffic;
  std::vector<FaultSpec> faults;

  ibcore::ib_poll_context poll_ctx_of(size_t p) const {
    return pairs[p].poll_ctx < 0 ? poll_ctx : ibcore::ib_poll_context(pairs[p].poll_ctx);
  }
  // The op cycle pair `p` runs.
  const std::vector<TrafficOp>& ops_of(size_t p) const {
    return pairs[p].ops.empty() ? traffic.ops : pairs[p].ops;
  }
};

// The names scenarios give flush codes, indexed by enum irdma_flush_opcode.
extern const std::vector<std::string> kFlushCodeNames;

// Throws ScenarioError naming the file, the line and the key.
Scenario load_scenario(const std::string& path);
// A `config:` section given as YAML text; `origin` names it in errors.
SimConfig parse_config(const std::string& yaml_text, const std::string& origin);
// The configuration in a file: a scenario's `config:` section, or a file that is one.
SimConfig load_config_file(const std::string& path);

// Throws ScenarioError when `config` asks for link faults a served model cannot carry: its
// writes land, and its interrupts go, as they are issued, to a host it does not simulate,
// so held and split writes, late MSI-X and vectors masked by the host are the in-process
// simulation's alone.
void check_servable(const SimConfig& config);

}  // namespace irdma_sim::testbench
