// The uverbs command ABI user space writes to /dev/infiniband/uverbsN (Linux's
// include/uapi/rdma/ib_user_verbs.h): the headers, the command numbers and the layouts of
// the commands this kernel half answers. Little-endian, as on every host it runs on; a u64
// is 8-byte aligned, so every size here is the kernel's.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ibcore::uverbs {

inline constexpr uint32_t IB_USER_VERBS_ABI_VERSION = 6;
inline constexpr uint32_t IB_USER_VERBS_CMD_COMMAND_MASK = 0xff;
inline constexpr uint32_t IB_USER_VERBS_CMD_FLAG_EXTENDED = 0x80000000u;

enum ib_uverbs_write_cmds : uint32_t {
  IB_USER_VERBS_CMD_GET_CONTEXT = 0,
  IB_USER_VERBS_CMD_QUERY_DEVICE = 1,
  IB_USER_VERBS_CMD_QUERY_PORT = 2,
  IB_USER_VERBS_CMD_ALLOC_PD = 3,
  IB_USER_VERBS_CMD_DEALLOC_PD = 4,
  IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL = 17,
};

enum ib_uverbs_ex_write_cmds : uint32_t {
  IB_USER_VERBS_EX_CMD_QUERY_DEVICE = IB_USER_VERBS_CMD_QUERY_DEVICE,
};

// Every write starts with it; sizes in 4-byte words, the header included (in_words).
struct ib_uverbs_cmd_hdr {
  uint32_t command;
  uint16_t in_words;
  uint16_t out_words;
};

// After the header of an extended command: sizes in 8-byte words, the headers excluded.
struct ib_uverbs_ex_cmd_hdr {
  uint64_t response;
  uint16_t provider_in_words;
  uint16_t provider_out_words;
  uint32_t cmd_hdr_reserved;
};

struct ib_uverbs_get_context {
  uint64_t response;
};

struct ib_uverbs_get_context_resp {
  uint32_t async_fd;
  uint32_t num_comp_vectors;
};

struct ib_uverbs_query_device {
  uint64_t response;
};

struct ib_uverbs_query_device_resp {
  uint64_t fw_ver;
  uint64_t node_guid;       // big-endian
  uint64_t sys_image_guid;  // big-endian
  uint64_t max_mr_size;
  uint64_t page_size_cap;
  uint32_t vendor_id;
  uint32_t vendor_part_id;
  uint32_t hw_ver;
  uint32_t max_qp;
  uint32_t max_qp_wr;
  uint32_t device_cap_flags;
  uint32_t max_sge;
  uint32_t max_sge_rd;
  uint32_t max_cq;
  uint32_t max_cqe;
  uint32_t max_mr;
  uint32_t max_pd;
  uint32_t max_qp_rd_atom;
  uint32_t max_ee_rd_atom;
  uint32_t max_res_rd_atom;
  uint32_t max_qp_init_rd_atom;
  uint32_t max_ee_init_rd_atom;
  uint32_t atomic_cap;
  uint32_t max_ee;
  uint32_t max_rdd;
  uint32_t max_mw;
  uint32_t max_raw_ipv6_qp;
  uint32_t max_raw_ethy_qp;
  uint32_t max_mcast_grp;
  uint32_t max_mcast_qp_attach;
  uint32_t max_total_mcast_qp_attach;
  uint32_t max_ah;
  uint32_t max_fmr;
  uint32_t max_map_per_fmr;
  uint32_t max_srq;
  uint32_t max_srq_wr;
  uint32_t max_srq_sge;
  uint16_t max_pkeys;
  uint8_t local_ca_ack_delay;
  uint8_t phys_port_cnt;
  uint8_t reserved[4];
};

struct ib_uverbs_ex_query_device {
  uint32_t comp_mask;
  uint32_t reserved;
};

struct ib_uverbs_odp_caps {
  uint64_t general_caps;
  uint32_t rc_odp_caps, uc_odp_caps, ud_odp_caps, reserved;
};

struct ib_uverbs_rss_caps {
  uint32_t supported_qpts, max_rwq_indirection_tables, max_rwq_indirection_table_size, reserved;
};

struct ib_uverbs_tm_caps {
  uint32_t max_rndv_hdr_size, max_num_tags, flags, max_ops, max_sge, reserved;
};

struct ib_uverbs_cq_moderation_caps {
  uint16_t max_cq_moderation_count, max_cq_moderation_period;
  uint32_t reserved;
};

struct ib_uverbs_ex_query_device_resp {
  ib_uverbs_query_device_resp base;
  uint32_t comp_mask;
  uint32_t response_length;  // the bytes written: user space reads no field past it
  ib_uverbs_odp_caps odp_caps;
  uint64_t timestamp_mask;
  uint64_t hca_core_clock;
  uint64_t device_cap_flags_ex;
  ib_uverbs_rss_caps rss_caps;
  uint32_t max_wq_type_rq;
  uint32_t raw_packet_caps;
  ib_uverbs_tm_caps tm_caps;
  ib_uverbs_cq_moderation_caps cq_moderation_caps;
  uint64_t max_dm_size;
  uint32_t xrc_odp_caps;
  uint32_t reserved;
};

struct ib_uverbs_query_port {
  uint64_t response;
  uint8_t port_num;
  uint8_t reserved[7];
};

struct ib_uverbs_query_port_resp {
  uint32_t port_cap_flags;
  uint32_t max_msg_sz;
  uint32_t bad_pkey_cntr;
  uint32_t qkey_viol_cntr;
  uint32_t gid_tbl_len;
  uint16_t pkey_tbl_len;
  uint16_t lid;
  uint16_t sm_lid;
  uint8_t state;
  uint8_t max_mtu;
  uint8_t active_mtu;
  uint8_t lmc;
  uint8_t max_vl_num;
  uint8_t sm_sl;
  uint8_t subnet_timeout;
  uint8_t init_type_reply;
  uint8_t active_width;
  uint8_t active_speed;
  uint8_t phys_state;
  uint8_t link_layer;
  uint8_t flags;
  uint8_t reserved;
};

struct ib_uverbs_alloc_pd {
  uint64_t response;
};

struct ib_uverbs_alloc_pd_resp {
  uint32_t pd_handle;
};

struct ib_uverbs_dealloc_pd {
  uint32_t pd_handle;
};

struct ib_uverbs_create_comp_channel {
  uint64_t response;
};

struct ib_uverbs_create_comp_channel_resp {
  uint32_t fd;
};

static_assert(sizeof(ib_uverbs_cmd_hdr) == 8 && sizeof(ib_uverbs_ex_cmd_hdr) == 16);
static_assert(sizeof(ib_uverbs_query_device_resp) == 176 && offsetof(ib_uverbs_query_device_resp, max_pkeys) == 168);
static_assert(sizeof(ib_uverbs_ex_query_device_resp) == 304 &&
              offsetof(ib_uverbs_ex_query_device_resp, timestamp_mask) == 208 &&
              offsetof(ib_uverbs_ex_query_device_resp, max_dm_size) == 288);
static_assert(sizeof(ib_uverbs_query_port) == 16 && sizeof(ib_uverbs_query_port_resp) == 40 &&
              offsetof(ib_uverbs_query_port_resp, link_layer) == 37);

}  // namespace ibcore::uverbs
