// The slice of ib-core's QP vocabulary the completion paths need: work requests and the
// QP object (include/rdma/ib_verbs.h values).
#pragma once

#include <cstdint>
#include <functional>

#include "driver/core/ib_verbs.h"

namespace ibcore {

struct ib_event;

enum ib_qp_type : int {
  IB_QPT_RC = 2,
  IB_QPT_UD = 4,
};

enum ib_wr_opcode : int {
  IB_WR_RDMA_WRITE = 0,
  IB_WR_RDMA_WRITE_WITH_IMM = 1,
  IB_WR_SEND = 2,
  IB_WR_SEND_WITH_IMM = 3,
  IB_WR_RDMA_READ = 4,
  IB_WR_ATOMIC_CMP_AND_SWP = 5,
  IB_WR_ATOMIC_FETCH_AND_ADD = 6,
  IB_WR_LOCAL_INV = 7,
  IB_WR_BIND_MW = 8,
  IB_WR_SEND_WITH_INV = 9,
  IB_WR_RDMA_READ_WITH_INV = 11,
  IB_WR_REG_MR = 0x20,
};

enum ib_access_flags : int {
  IB_ACCESS_LOCAL_WRITE = 1 << 0,
  IB_ACCESS_REMOTE_WRITE = 1 << 1,
  IB_ACCESS_REMOTE_READ = 1 << 2,
  IB_ACCESS_REMOTE_ATOMIC = 1 << 3,
  IB_ACCESS_MW_BIND = 1 << 4,
};

// A protection domain (ib_alloc_pd): a QP reaches only the memory keys of its own PD.
class ib_pd {
 public:
  virtual ~ib_pd() = default;
  uint32_t pd_id = 0;
};

// A memory region for fast registration (ib_alloc_mr, ib_map_mr_sg): the range it maps once
// registered, and its keys.
class ib_mr {
 public:
  virtual ~ib_mr() = default;
  uint32_t lkey = 0, rkey = 0;
  uint64_t iova = 0;
  uint64_t length = 0;
};

// A memory window (ib_alloc_mw): bound over a region by a BIND_MW work request.
class ib_mw {
 public:
  virtual ~ib_mw() = default;
  uint32_t rkey = 0;
};

enum ib_send_flags : int {
  IB_SEND_FENCE = 1 << 0,
  IB_SEND_SIGNALED = 1 << 1,
  IB_SEND_SOLICITED = 1 << 2,
};

struct ib_sge {
  uint64_t addr = 0;  // device address of the buffer
  uint32_t length = 0;
  uint32_t lkey = 0;
};

struct ib_send_wr {
  const ib_send_wr* next = nullptr;
  union {
    uint64_t wr_id;
    ib_cqe* wr_cqe;
  };
  const ib_sge* sg_list = nullptr;
  int num_sge = 0;
  ib_wr_opcode opcode = IB_WR_SEND;
  int send_flags = 0;
  union {
    uint32_t imm_data;  // big-endian, as __be32
    uint32_t invalidate_rkey;
  } ex;
  // RDMA WRITE/READ: the remote buffer (Linux's struct ib_rdma_wr around the WR).
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  // Atomics: the add (FETCH_AND_ADD) or compare (CMP_AND_SWP) value and the swap value, at
  // remote_addr (Linux's struct ib_atomic_wr).
  uint64_t compare_add = 0;
  uint64_t swap = 0;
  // UD SEND: the destination (Linux's struct ib_ud_wr, without an address handle).
  uint32_t remote_qpn = 0;
  uint32_t remote_qkey = 0;
  // REG_MR: registers `mr` under `key` (its rkey with a new low byte), with `access`
  // (Linux's struct ib_reg_wr).
  struct {
    ib_mr* mr = nullptr;
    uint32_t key = 0;
    int access = 0;
  } reg;
  // BIND_MW: binds `mw` (type 1) over [addr, addr + length) of `mr` under the key `rkey`
  // (rdma-core's ibv_mw_bind_info; the kernel's irdma takes no BIND_MW).
  struct {
    ib_mw* mw = nullptr;
    ib_mr* mr = nullptr;
    uint32_t rkey = 0;
    uint64_t addr = 0;
    uint64_t length = 0;
    int access = 0;
  } bind;
  ib_send_wr() : wr_id(0), ex{0} {}
};

struct ib_recv_wr {
  const ib_recv_wr* next = nullptr;
  union {
    uint64_t wr_id;
    ib_cqe* wr_cqe;
  };
  const ib_sge* sg_list = nullptr;
  int num_sge = 0;
  ib_recv_wr() : wr_id(0) {}
};

// What a QP holds: asked for at create_qp, and rewritten with what the driver made (the
// queues may hold more, never less).
struct ib_qp_cap {
  uint32_t max_send_wr = 0;
  uint32_t max_recv_wr = 0;
  uint32_t max_send_sge = 1;
  uint32_t max_recv_sge = 1;
  uint32_t max_inline_data = 0;
};

struct ib_qp_init_attr {
  ib_cq* send_cq = nullptr;
  ib_cq* recv_cq = nullptr;
  ib_qp_cap cap;
  ib_qp_type qp_type = IB_QPT_RC;
  bool sq_sig_all = false;  // every send completes, whatever its flags
  // The QP's event_handler from the moment the device can report on it.
  std::function<void(const ib_event&)> event_handler;
};

enum ib_qp_state : uint8_t {
  IB_QPS_RESET,
  IB_QPS_INIT,
  IB_QPS_RTR,
  IB_QPS_RTS,
  IB_QPS_SQD,
  IB_QPS_SQE,
  IB_QPS_ERR,
};

enum ib_qp_attr_mask : uint32_t {
  IB_QP_STATE = 1 << 0,
  IB_QP_CUR_STATE = 1 << 1,
  IB_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2,
  IB_QP_ACCESS_FLAGS = 1 << 3,
  IB_QP_PKEY_INDEX = 1 << 4,
  IB_QP_PORT = 1 << 5,
  IB_QP_QKEY = 1 << 6,
  IB_QP_AV = 1 << 7,
  IB_QP_PATH_MTU = 1 << 8,
  IB_QP_TIMEOUT = 1 << 9,
  IB_QP_RETRY_CNT = 1 << 10,
  IB_QP_RNR_RETRY = 1 << 11,
  IB_QP_RQ_PSN = 1 << 12,
  IB_QP_MAX_QP_RD_ATOMIC = 1 << 13,
  IB_QP_ALT_PATH = 1 << 14,
  IB_QP_MIN_RNR_TIMER = 1 << 15,
  IB_QP_SQ_PSN = 1 << 16,
  IB_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
  IB_QP_PATH_MIG_STATE = 1 << 18,
  IB_QP_CAP = 1 << 19,
  IB_QP_DEST_QPN = 1 << 20,
};

enum ib_ah_flags : uint8_t { IB_AH_GRH = 1 };

// Where a connected QP's packets go (struct rdma_ah_attr): on RoCE, always by GID.
struct rdma_ah_attr {
  uint8_t dgid[16] = {};
  uint32_t flow_label = 0;
  uint8_t sgid_index = 0;
  uint8_t hop_limit = 0;
  uint8_t traffic_class = 0;
  uint8_t sl = 0;
  uint8_t static_rate = 0;
  uint8_t port_num = 0;
  uint8_t ah_flags = 0;
};

// An address handle (ib_create_ah): where a UD work request's datagram goes.
class ib_ah {
 public:
  virtual ~ib_ah() = default;
  rdma_ah_attr attr;
};

// A QP's attributes as ib_modify_qp sets them and ib_query_qp returns them.
struct ib_qp_attr {
  ib_qp_state qp_state = IB_QPS_RESET;
  ib_qp_state cur_qp_state = IB_QPS_RESET;
  uint8_t path_mtu = 0;  // enum ib_mtu
  uint8_t path_mig_state = 0;
  uint32_t qkey = 0;
  uint32_t rq_psn = 0;
  uint32_t sq_psn = 0;
  uint32_t dest_qp_num = 0;
  int qp_access_flags = 0;
  ib_qp_cap cap;
  rdma_ah_attr ah_attr;
  uint16_t pkey_index = 0;
  uint8_t en_sqd_async_notify = 0;
  uint8_t sq_draining = 0;
  uint8_t max_rd_atomic = 0;
  uint8_t max_dest_rd_atomic = 0;
  uint8_t min_rnr_timer = 0;
  uint8_t port_num = 0;
  uint8_t timeout = 0;
  uint8_t retry_cnt = 0;
  uint8_t rnr_retry = 0;
};

// ib_modify_qp_is_ok: whether `mask` carries what the move from `cur` to `next` needs and
// nothing it does not take, for RC and UD QPs.
bool ib_modify_qp_is_ok(ib_qp_state cur, ib_qp_state next, ib_qp_type type, uint32_t mask);

class ib_qp {
 public:
  virtual ~ib_qp() = default;
  ib_cq* send_cq = nullptr;
  ib_cq* recv_cq = nullptr;
  uint32_t qp_num = 0;
  ib_qp_type qp_type = IB_QPT_RC;
  // The QP's asynchronous events (QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR), called from the
  // event queue's handler with no lock held.
  std::function<void(const ib_event&)> event_handler;
};

}  // namespace ibcore
