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
  IB_USER_VERBS_CMD_CREATE_AH = 5,
  IB_USER_VERBS_CMD_DESTROY_AH = 8,
  IB_USER_VERBS_CMD_REG_MR = 9,
  IB_USER_VERBS_CMD_DEREG_MR = 13,
  IB_USER_VERBS_CMD_ALLOC_MW = 14,
  IB_USER_VERBS_CMD_DEALLOC_MW = 16,
  IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL = 17,
  IB_USER_VERBS_CMD_CREATE_CQ = 18,
  IB_USER_VERBS_CMD_RESIZE_CQ = 19,
  IB_USER_VERBS_CMD_DESTROY_CQ = 20,
  IB_USER_VERBS_CMD_CREATE_QP = 24,
  IB_USER_VERBS_CMD_QUERY_QP = 25,
  IB_USER_VERBS_CMD_MODIFY_QP = 26,
  IB_USER_VERBS_CMD_DESTROY_QP = 27,
};

enum ib_uverbs_ex_write_cmds : uint32_t {
  IB_USER_VERBS_EX_CMD_QUERY_DEVICE = IB_USER_VERBS_CMD_QUERY_DEVICE,
  IB_USER_VERBS_EX_CMD_MODIFY_QP = IB_USER_VERBS_CMD_MODIFY_QP,
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

struct ib_uverbs_reg_mr {
  uint64_t response;
  uint64_t start;
  uint64_t length;
  uint64_t hca_va;
  uint32_t pd_handle;
  uint32_t access_flags;
};

struct ib_uverbs_reg_mr_resp {
  uint32_t mr_handle;
  uint32_t lkey;
  uint32_t rkey;
};

struct ib_uverbs_dereg_mr {
  uint32_t mr_handle;
};

struct ib_uverbs_alloc_mw {
  uint64_t response;
  uint32_t pd_handle;
  uint8_t mw_type;
  uint8_t reserved[3];
};

struct ib_uverbs_alloc_mw_resp {
  uint32_t mw_handle;
  uint32_t rkey;
};

struct ib_uverbs_dealloc_mw {
  uint32_t mw_handle;
};

struct ib_uverbs_create_cq {
  uint64_t response;
  uint64_t user_handle;  // what the application's events name the CQ by
  uint32_t cqe;
  uint32_t comp_vector;
  int32_t comp_channel;  // -1: none
  uint32_t reserved;
};

struct ib_uverbs_create_cq_resp {
  uint32_t cq_handle;
  uint32_t cqe;
};

struct ib_uverbs_resize_cq {
  uint64_t response;
  uint32_t cq_handle;
  uint32_t cqe;
};

struct ib_uverbs_resize_cq_resp {
  uint32_t cqe;
  uint32_t reserved;
};

struct ib_uverbs_destroy_cq {
  uint64_t response;
  uint32_t cq_handle;
  uint32_t reserved;
};

// libibverbs waits until it has acknowledged as many events as these say were queued.
struct ib_uverbs_destroy_cq_resp {
  uint32_t comp_events_reported;
  uint32_t async_events_reported;
};

struct ib_uverbs_create_qp {
  uint64_t response;
  uint64_t user_handle;
  uint32_t pd_handle;
  uint32_t send_cq_handle;
  uint32_t recv_cq_handle;
  uint32_t srq_handle;
  uint32_t max_send_wr;
  uint32_t max_recv_wr;
  uint32_t max_send_sge;
  uint32_t max_recv_sge;
  uint32_t max_inline_data;
  uint8_t sq_sig_all;
  uint8_t qp_type;
  uint8_t is_srq;
  uint8_t reserved;
};

struct ib_uverbs_create_qp_resp {
  uint32_t qp_handle;
  uint32_t qpn;
  uint32_t max_send_wr;
  uint32_t max_recv_wr;
  uint32_t max_send_sge;
  uint32_t max_recv_sge;
  uint32_t max_inline_data;
  uint32_t reserved;
};

struct ib_uverbs_qp_dest {
  uint8_t dgid[16];
  uint32_t flow_label;
  uint16_t dlid;
  uint16_t reserved;
  uint8_t sgid_index;
  uint8_t hop_limit;
  uint8_t traffic_class;
  uint8_t sl;
  uint8_t src_path_bits;
  uint8_t static_rate;
  uint8_t is_global;
  uint8_t port_num;
};

struct ib_uverbs_modify_qp {
  ib_uverbs_qp_dest dest;
  ib_uverbs_qp_dest alt_dest;
  uint32_t qp_handle;
  uint32_t attr_mask;
  uint32_t qkey;
  uint32_t rq_psn;
  uint32_t sq_psn;
  uint32_t dest_qp_num;
  uint32_t qp_access_flags;
  uint16_t pkey_index;
  uint16_t alt_pkey_index;
  uint8_t qp_state;
  uint8_t cur_qp_state;
  uint8_t path_mtu;
  uint8_t path_mig_state;
  uint8_t en_sqd_async_notify;
  uint8_t max_rd_atomic;
  uint8_t max_dest_rd_atomic;
  uint8_t min_rnr_timer;
  uint8_t port_num;
  uint8_t timeout;
  uint8_t retry_cnt;
  uint8_t rnr_retry;
  uint8_t alt_port_num;
  uint8_t alt_timeout;
  uint8_t reserved[2];
};

struct ib_uverbs_ex_modify_qp {
  ib_uverbs_modify_qp base;
  uint32_t rate_limit;
  uint32_t reserved;
};

struct ib_uverbs_ex_modify_qp_resp {
  uint32_t comp_mask;
  uint32_t response_length;
};

struct ib_uverbs_query_qp {
  uint64_t response;
  uint32_t qp_handle;
  uint32_t attr_mask;
};

struct ib_uverbs_query_qp_resp {
  ib_uverbs_qp_dest dest;
  ib_uverbs_qp_dest alt_dest;
  uint32_t max_send_wr;
  uint32_t max_recv_wr;
  uint32_t max_send_sge;
  uint32_t max_recv_sge;
  uint32_t max_inline_data;
  uint32_t qkey;
  uint32_t rq_psn;
  uint32_t sq_psn;
  uint32_t dest_qp_num;
  uint32_t qp_access_flags;
  uint16_t pkey_index;
  uint16_t alt_pkey_index;
  uint8_t qp_state;
  uint8_t cur_qp_state;
  uint8_t path_mtu;
  uint8_t path_mig_state;
  uint8_t sq_draining;
  uint8_t max_rd_atomic;
  uint8_t max_dest_rd_atomic;
  uint8_t min_rnr_timer;
  uint8_t port_num;
  uint8_t timeout;
  uint8_t retry_cnt;
  uint8_t rnr_retry;
  uint8_t alt_port_num;
  uint8_t alt_timeout;
  uint8_t sq_sig_all;
  uint8_t reserved[5];
};

struct ib_uverbs_destroy_qp {
  uint64_t response;
  uint32_t qp_handle;
  uint32_t reserved;
};

struct ib_uverbs_destroy_qp_resp {
  uint32_t events_reported;
};

struct ib_uverbs_global_route {
  uint8_t dgid[16];
  uint32_t flow_label;
  uint8_t sgid_index;
  uint8_t hop_limit;
  uint8_t traffic_class;
  uint8_t reserved;
};

struct ib_uverbs_ah_attr {
  ib_uverbs_global_route grh;
  uint16_t dlid;
  uint8_t sl;
  uint8_t src_path_bits;
  uint8_t static_rate;
  uint8_t is_global;
  uint8_t port_num;
  uint8_t reserved;
};

struct ib_uverbs_create_ah {
  uint64_t response;
  uint64_t user_handle;
  uint32_t pd_handle;
  uint32_t reserved;
  ib_uverbs_ah_attr attr;
};

struct ib_uverbs_create_ah_resp {
  uint32_t ah_handle;
};

struct ib_uverbs_destroy_ah {
  uint32_t ah_handle;
};

// What a read of a completion channel returns, one per event: the CQ's user_handle.
struct ib_uverbs_comp_event_desc {
  uint64_t cq_handle;
};

// What a read of the async event file returns: the object's user_handle (the port number
// for port events), the event (enum ib_event_type).
struct ib_uverbs_async_event_desc {
  uint64_t element;
  uint32_t event_type;
  uint32_t reserved;
};

static_assert(sizeof(ib_uverbs_cmd_hdr) == 8 && sizeof(ib_uverbs_ex_cmd_hdr) == 16);
static_assert(sizeof(ib_uverbs_query_device_resp) == 176 && offsetof(ib_uverbs_query_device_resp, max_pkeys) == 168);
static_assert(sizeof(ib_uverbs_ex_query_device_resp) == 304 &&
              offsetof(ib_uverbs_ex_query_device_resp, timestamp_mask) == 208 &&
              offsetof(ib_uverbs_ex_query_device_resp, max_dm_size) == 288);
static_assert(sizeof(ib_uverbs_query_port) == 16 && sizeof(ib_uverbs_query_port_resp) == 40 &&
              offsetof(ib_uverbs_query_port_resp, link_layer) == 37);
static_assert(sizeof(ib_uverbs_reg_mr) == 40 && sizeof(ib_uverbs_reg_mr_resp) == 12);
static_assert(sizeof(ib_uverbs_alloc_mw) == 16 && sizeof(ib_uverbs_alloc_mw_resp) == 8);
static_assert(sizeof(ib_uverbs_create_cq) == 32 && sizeof(ib_uverbs_destroy_cq) == 16 &&
              sizeof(ib_uverbs_destroy_cq_resp) == 8);
static_assert(sizeof(ib_uverbs_create_qp) == 56 && sizeof(ib_uverbs_create_qp_resp) == 32 &&
              offsetof(ib_uverbs_create_qp, qp_type) == 53);
static_assert(sizeof(ib_uverbs_qp_dest) == 32 && sizeof(ib_uverbs_modify_qp) == 112 &&
              offsetof(ib_uverbs_modify_qp, qp_state) == 96 && offsetof(ib_uverbs_modify_qp, rnr_retry) == 107);
static_assert(sizeof(ib_uverbs_query_qp) == 16 && sizeof(ib_uverbs_query_qp_resp) == 128 &&
              offsetof(ib_uverbs_query_qp_resp, qp_state) == 108 && offsetof(ib_uverbs_query_qp_resp, sq_sig_all) == 122);
static_assert(sizeof(ib_uverbs_async_event_desc) == 16);
static_assert(sizeof(ib_uverbs_ah_attr) == 32 && sizeof(ib_uverbs_create_ah) == 56);

}  // namespace ibcore::uverbs
