// The ib-core vocabulary the CQ layer speaks, with Linux's numeric values
// (include/rdma/ib_verbs.h; irdma spec sections A.2 and B).
#pragma once

#include <array>
#include <cstdint>

namespace ibcore {

enum ib_wc_status : uint32_t {
  IB_WC_SUCCESS = 0,
  IB_WC_LOC_LEN_ERR = 1,
  IB_WC_LOC_QP_OP_ERR = 2,
  IB_WC_LOC_EEC_OP_ERR = 3,
  IB_WC_LOC_PROT_ERR = 4,
  IB_WC_WR_FLUSH_ERR = 5,
  IB_WC_MW_BIND_ERR = 6,
  IB_WC_BAD_RESP_ERR = 7,
  IB_WC_LOC_ACCESS_ERR = 8,
  IB_WC_REM_INV_REQ_ERR = 9,
  IB_WC_REM_ACCESS_ERR = 10,
  IB_WC_REM_OP_ERR = 11,
  IB_WC_RETRY_EXC_ERR = 12,
  IB_WC_RNR_RETRY_EXC_ERR = 13,
  IB_WC_LOC_RDD_VIOL_ERR = 14,
  IB_WC_REM_INV_RD_REQ_ERR = 15,
  IB_WC_REM_ABORT_ERR = 16,
  IB_WC_INV_EECN_ERR = 17,
  IB_WC_INV_EEC_STATE_ERR = 18,
  IB_WC_FATAL_ERR = 19,
  IB_WC_RESP_TIMEOUT_ERR = 20,
  IB_WC_GENERAL_ERR = 21,
};

// The layout of kernels with IB_WC_FLUSH/ATOMIC_WRITE (>= 6.2), kept throughout.
enum ib_wc_opcode : uint32_t {
  IB_WC_SEND = 0,
  IB_WC_RDMA_WRITE = 1,
  IB_WC_RDMA_READ = 2,
  IB_WC_COMP_SWAP = 3,
  IB_WC_FETCH_ADD = 4,
  IB_WC_BIND_MW = 5,
  IB_WC_LOCAL_INV = 6,
  IB_WC_LSO = 7,
  IB_WC_FLUSH = 8,
  IB_WC_ATOMIC_WRITE = 9,
  IB_WC_REG_MR = 10,
  IB_WC_MASKED_COMP_SWAP = 11,
  IB_WC_MASKED_FETCH_ADD = 12,
  IB_WC_RECV = 1 << 7,
  IB_WC_RECV_RDMA_WITH_IMM = IB_WC_RECV + 1,
};

enum ib_wc_flags : int {
  IB_WC_GRH = 1 << 0,
  IB_WC_WITH_IMM = 1 << 1,
  IB_WC_WITH_INVALIDATE = 1 << 2,
  IB_WC_IP_CSUM_OK = 1 << 3,
  IB_WC_WITH_SMAC = 1 << 4,
  IB_WC_WITH_VLAN = 1 << 5,
  IB_WC_WITH_NETWORK_HDR_TYPE = 1 << 6,
};

enum ib_cq_notify_flags : unsigned {
  IB_CQ_SOLICITED = 1 << 0,
  IB_CQ_NEXT_COMP = 1 << 1,
  IB_CQ_SOLICITED_MASK = IB_CQ_SOLICITED | IB_CQ_NEXT_COMP,
  IB_CQ_REPORT_MISSED_EVENTS = 1 << 2,
};

enum ib_poll_context : int {
  IB_POLL_SOFTIRQ = 0,
  IB_POLL_WORKQUEUE = 1,
  IB_POLL_UNBOUND_WORKQUEUE = 2,
  IB_POLL_LAST_POOL_TYPE = IB_POLL_UNBOUND_WORKQUEUE,
  IB_POLL_DIRECT = 3,
};

enum rdma_network_type : uint8_t {
  RDMA_NETWORK_IB = 0,
  RDMA_NETWORK_ROCE_V1 = 1,
  RDMA_NETWORK_IPV4 = 2,
  RDMA_NETWORK_IPV6 = 3,
};

struct ib_cq;
struct ib_wc;
class ib_qp;

// A completion's consumer, reached through ib_wc::wr_cqe (the kernel's struct ib_cqe).
struct ib_cqe {
  void (*done)(ib_cq* cq, ib_wc* wc);
};

struct ib_wc {
  union {
    uint64_t wr_id;
    ib_cqe* wr_cqe;
  };
  ib_wc_status status;
  ib_wc_opcode opcode;
  uint32_t vendor_err;
  uint32_t byte_len;
  ib_qp* qp;
  union {
    uint32_t imm_data;  // big-endian on the wire, as __be32 in the kernel
    uint32_t invalidate_rkey;
  } ex;
  uint32_t src_qp;
  uint32_t slid;
  int wc_flags;
  uint16_t pkey_index;
  uint8_t sl;
  uint8_t dlid_path_bits;
  uint32_t port_num;
  std::array<uint8_t, 6> smac;
  uint16_t vlan_id;
  uint8_t network_hdr_type;
};

// Core's limits and budgets (drivers/infiniband/core/cq.c; spec A.1).
inline constexpr unsigned IB_MAX_SHARED_CQ_SZ = 4096;
inline constexpr int IB_POLL_BATCH = 16;
inline constexpr int IB_POLL_BATCH_DIRECT = 8;
inline constexpr int IB_POLL_BUDGET_IRQ = 256;
inline constexpr int IB_POLL_BUDGET_WORKQUEUE = 65536;
inline constexpr unsigned IB_POLL_FLAGS = IB_CQ_NEXT_COMP | IB_CQ_REPORT_MISSED_EVENTS;

}  // namespace ibcore
