// What irdma's user-space provider and its kernel half say to each other beyond the core
// commands (Linux's include/uapi/rdma/irdma-abi.h, ABI version 5).
#pragma once

#include <cstdint>

namespace irdma {

inline constexpr uint8_t IRDMA_ABI_VER = 5;

// GET_CONTEXT's driver part.
struct irdma_alloc_ucontext_req {
  uint32_t rsvd32;
  uint8_t userspace_ver;
  uint8_t rsvd8[3];
};

struct irdma_alloc_ucontext_resp {
  uint32_t max_pds;
  uint32_t max_qps;
  uint32_t wq_size;  // ignored by a provider of ABI 5
  uint8_t kernel_ver;
  uint8_t rsvd[3];
  uint64_t feature_flags;
  uint64_t db_mmap_key;  // the mmap offset of the context's doorbell page
  uint32_t max_hw_wq_frags;
  uint32_t max_hw_read_sges;
  uint32_t max_hw_inline;
  uint32_t max_hw_rq_quanta;
  uint32_t max_hw_wq_quanta;
  uint32_t min_hw_cq_size;
  uint32_t max_hw_cq_size;
  uint16_t max_hw_sq_chunk;
  uint8_t hw_rev;  // 0 would make the provider speak GEN_1's legacy ABI
  uint8_t rsvd2;
};

struct irdma_alloc_pd_resp {
  uint32_t pd_id;
  uint8_t rsvd[4];
};

// REG_MR's driver part: what the registered memory is for. QP and CQ memory gets no key;
// CREATE_QP and CREATE_CQ find it by its address.
enum irdma_memreg_type : uint16_t {
  IRDMA_MEMREG_TYPE_MEM = 0,
  IRDMA_MEMREG_TYPE_QP = 1,
  IRDMA_MEMREG_TYPE_CQ = 2,
};

struct irdma_mem_reg_req {
  uint16_t reg_type;
  uint16_t cq_pages;  // CQ: the ring's pages (the shadow area's own registration: 1)
  uint16_t rq_pages;  // QP: the SQ's pages, then the RQ's, then the shadow area's page
  uint16_t sq_pages;
};

struct irdma_create_cq_req {
  uint64_t user_cq_buf;
  uint64_t user_shadow_area;
};

struct irdma_resize_cq_req {
  uint64_t user_cq_buffer;  // the new ring, registered as CQ memory
};

struct irdma_create_cq_resp {
  uint32_t cq_id;
  uint32_t cq_size;
};

struct irdma_create_qp_req {
  uint64_t user_wqe_bufs;
  uint64_t user_compl_ctx;  // what every CQE of the QP carries in qword1
};

struct irdma_create_qp_resp {
  uint32_t qp_id;
  uint32_t actual_sq_size;
  uint32_t actual_rq_size;
  uint32_t irdma_drv_opt;
  uint16_t push_idx;
  uint8_t lsmm;
  uint8_t rsvd;
  uint32_t qp_caps;
};

struct irdma_create_ah_resp {
  uint32_t ah_id;  // what the provider puts in a UD WQE
  uint8_t rsvd[4];
};

// qp_caps.
inline constexpr uint32_t IRDMA_WRITE_WITH_IMM = 1;
inline constexpr uint32_t IRDMA_SEND_WITH_IMM = 2;
inline constexpr uint32_t IRDMA_ROCE = 4;

// feature_flags a provider of ABI 5 acts on.
inline constexpr uint64_t IRDMA_FEATURE_RTS_AE = 1ull << 0;
inline constexpr uint64_t IRDMA_FEATURE_CQ_RESIZE = 1ull << 1;

static_assert(sizeof(irdma_mem_reg_req) == 8 && sizeof(irdma_create_cq_req) == 16 &&
              sizeof(irdma_create_cq_resp) == 8 && sizeof(irdma_create_qp_req) == 16 &&
              sizeof(irdma_create_qp_resp) == 24 && sizeof(irdma_create_ah_resp) == 8);
static_assert(sizeof(irdma_alloc_ucontext_req) == 8 && sizeof(irdma_alloc_ucontext_resp) == 64 &&
              sizeof(irdma_alloc_pd_resp) == 8);

}  // namespace irdma
