// What user space asks of the device through uverbs: irdma_query_device, irdma_query_port,
// irdma_alloc_ucontext with its doorbell page, irdma_mmap.
#include <array>
#include <cerrno>
#include <cstring>

#include "driver/irdma/irdma_abi.h"
#include "driver/irdma/irdma_device.h"

namespace irdma {

using namespace ibcore;

namespace {

// A context's one mmap entry, its doorbell page (rdma_user_mmap_entry_insert's key):
// page-aligned, as the provider hands it to mmap as the offset.
constexpr uint64_t kDbMmapKey = 1ull << 12;
constexpr uint64_t kPageSize = 4096;

// What ib_get_eth_speed reports for E810's 100 Gb/s port: 4X at EDR.
constexpr uint8_t IB_WIDTH_4X = 2;
constexpr uint8_t IB_SPEED_EDR = 32;

// A MAC's six bytes in wire order.
std::array<uint8_t, 6> mac_bytes(uint64_t mac) {
  return {uint8_t(mac >> 40), uint8_t(mac >> 32), uint8_t(mac >> 24), uint8_t(mac >> 16), uint8_t(mac >> 8),
          uint8_t(mac)};
}

// The EUI-64 of a MAC (addrconf_addr_eui48), in wire order.
uint64_t mac_to_guid(uint64_t mac) {
  const std::array<uint8_t, 6> m = mac_bytes(mac);
  const uint8_t b[8] = {uint8_t(m[0] ^ 2), m[1], m[2], 0xFF, 0xFE, m[3], m[4], m[5]};
  uint64_t guid;
  std::memcpy(&guid, b, 8);
  return guid;
}

}  // namespace

int irdma_device::query_device(ib_device_attr* attr) {
  const irdma_device_caps& c = caps();
  *attr = {};
  attr->fw_ver = uint64_t(c.fw_version >> 16) << 32 | (c.fw_version & 0xFFFF);
  // The MAC, then two zero bytes (ether_addr_copy into the GUID).
  std::memcpy(&attr->sys_image_guid, mac_bytes(c.mac).data(), 6);
  attr->max_mr_size = IRDMA_MAX_MR_SIZE;
  attr->page_size_cap = 4096 | 2ull << 20 | 1ull << 30;
  attr->vendor_id = c.vendor_id;
  attr->vendor_part_id = c.device_id;
  attr->hw_ver = c.revision;
  attr->max_qp = int(c.max_qp);
  attr->max_qp_wr = int(IRDMA_MAX_QP_WRS);
  attr->device_cap_flags = IB_DEVICE_MEM_WINDOW | IB_DEVICE_MEM_MGT_EXTENSIONS | IB_DEVICE_RC_RNR_NAK_GEN;
  attr->max_send_sge = attr->max_recv_sge = int(IRDMA_MAX_FRAGS);
  attr->max_sge_rd = int(IRDMA_MAX_SGE_RD);
  attr->max_cq = int(c.max_cq);
  attr->max_cqe = c.max_cqe;
  attr->max_mr = attr->max_mw = int(c.max_stags ? c.max_stags - 1 : 0);
  attr->max_pd = int(IRDMA_MAX_PDS);
  attr->max_ah = int(IRDMA_MAX_AH);
  attr->max_qp_rd_atom = int(IRDMA_MAX_IRD_SIZE);
  attr->max_qp_init_rd_atom = int(IRDMA_MAX_ORD_SIZE);
  attr->atomic_cap = c.atomics ? IB_ATOMIC_HCA : IB_ATOMIC_NONE;
  attr->max_pkeys = IRDMA_PKEY_TBL_SZ;
  attr->max_fast_reg_page_list_len = c.pble_entries;
  return 0;
}

// A RoCE port: up while the device is, Ethernet's MTU of 1500 as an IB MTU of 1024.
int irdma_device::query_port(uint32_t port, ib_port_attr* attr) {
  if (port != 1) return -EINVAL;
  *attr = {};
  const bool up = !rf_.reset.requested();
  attr->state = up ? IB_PORT_ACTIVE : IB_PORT_DOWN;
  attr->phys_state = up ? IB_PORT_PHYS_STATE_LINK_UP : IB_PORT_PHYS_STATE_DISABLED;
  attr->max_mtu = IB_MTU_4096;
  attr->active_mtu = IB_MTU_1024;
  attr->active_width = IB_WIDTH_4X;
  attr->active_speed = IB_SPEED_EDR;
  attr->gid_tbl_len = IRDMA_ROCE_GID_TBL_LEN;
  attr->pkey_tbl_len = IRDMA_PKEY_TBL_SZ;
  attr->port_cap_flags = IB_PORT_CM_SUP | IB_PORT_IP_BASED_GIDS;
  attr->max_msg_sz = IRDMA_MAX_OUTBOUND_MSG_SIZE;
  attr->link_layer = IB_LINK_LAYER_ETHERNET;
  return 0;
}

ib_ucontext* irdma_device::alloc_ucontext(ib_udata& udata, int& err) {
  irdma_alloc_ucontext_req req{};
  if (udata.inlen < sizeof req || udata.outlen < sizeof(irdma_alloc_ucontext_resp)) {
    err = -EINVAL;
    return nullptr;
  }
  ib_copy_from_udata(&req, udata, sizeof req);
  // A provider older than ABI 4 speaks a layout this kernel half does not.
  if (req.userspace_ver < 4 || req.userspace_ver > IRDMA_ABI_VER) {
    err = -EINVAL;
    return nullptr;
  }
  const irdma_device_caps& c = caps();
  irdma_alloc_ucontext_resp resp{};
  resp.max_pds = IRDMA_MAX_PDS;
  resp.max_qps = c.max_qp;
  resp.wq_size = IRDMA_MAX_QP_WRS * 2;
  resp.kernel_ver = req.userspace_ver;
  resp.feature_flags = IRDMA_FEATURE_RTS_AE | (c.cq_resize ? IRDMA_FEATURE_CQ_RESIZE : 0);
  resp.db_mmap_key = kDbMmapKey;
  resp.max_hw_wq_frags = IRDMA_MAX_FRAGS;
  resp.max_hw_read_sges = IRDMA_MAX_SGE_RD;
  resp.max_hw_inline = IRDMA_MAX_INLINE_DATA_SIZE;
  resp.max_hw_rq_quanta = IRDMA_MAX_WQ_QUANTA;
  resp.max_hw_wq_quanta = IRDMA_MAX_WQ_QUANTA;
  resp.min_hw_cq_size = IRDMA_MIN_CQ_SIZE;
  resp.max_hw_cq_size = uint32_t(c.max_cqe);  // the provider refuses more, as ib-core would
  resp.max_hw_sq_chunk = IRDMA_MAX_QUANTA_PER_WR;
  resp.hw_rev = uint8_t(c.hw_rev);
  if ((err = ib_copy_to_udata(udata, &resp, sizeof resp))) return nullptr;
  auto* uctx = new irdma_ucontext;
  uctx->device = this;
  uctx->lock = hw().exec.make_lock();
  return uctx;
}

void irdma_device::dealloc_ucontext(ib_ucontext* uctx) { delete static_cast<irdma_ucontext*>(uctx); }

// The doorbell page, and only it: BAR0's page that user doorbells land in.
int irdma_device::mmap(ib_ucontext* /*uctx*/, uint64_t offset, uint64_t length, ib_mmap_range* out) {
  if (offset != kDbMmapKey || length != kPageSize) return -EINVAL;
  *out = {0, caps().db_addr_offset, kPageSize};
  return 0;
}

// irdma_init_roce_device, then what ib_register_device caches.
void irdma_device::register_device() {
  node_guid = mac_to_guid(caps().mac);
  phys_port_cnt = 1;
  num_comp_vectors = caps().num_ceqs;
  query_device(&attrs);
}

}  // namespace irdma
