// User QPs (irdma_create_qp, irdma_modify_qp_roce, irdma_query_qp, irdma_destroy_qp with
// udata): the queues live in memory the application registered (REG_MR of the QP type):
// the SQ, then the RQ, then the shadow area's page. The application posts and rings the
// doorbell itself; the kernel holds the context and the attributes. And the address
// handles its UD QPs send with (irdma_create_user_ah).
#include <algorithm>
#include <cerrno>
#include <cstddef>

#include "driver/irdma/irdma_abi.h"
#include "driver/irdma/irdma_device.h"

namespace irdma {

using namespace ibcore;

namespace {

constexpr uint64_t kPage = 4096;
constexpr uint32_t kMaxUserWrs = 32768;

bool power_of_two(uint64_t v) { return v && !(v & (v - 1)); }

// What the user may ask of a QP at create (irdma_validate_qp_attrs).
int validate_qp_attrs(const ib_qp_init_attr& attr) {
  if (attr.qp_type != IB_QPT_RC && attr.qp_type != IB_QPT_UD) return -EOPNOTSUPP;
  if (attr.cap.max_inline_data > IRDMA_MAX_INLINE_DATA_SIZE || attr.cap.max_send_sge > IRDMA_MAX_FRAGS ||
      attr.cap.max_recv_sge > IRDMA_MAX_FRAGS || attr.cap.max_send_wr > kMaxUserWrs ||
      attr.cap.max_recv_wr > kMaxUserWrs)
    return -EINVAL;
  return 0;
}

}  // namespace

// The provider sends its rings' depths as WRs (depth >> shift): the SQ is max_send_wr
// WQEs of 2^sqshift quanta, the RQ max_recv_wr WQEs of 2^rqshift quanta. Both must be
// powers of two the device can size, inside the pages registered for them, each one
// DMA-contiguous range (the device takes no page-list rings).
ib_qp* irdma_device::create_user_qp(ib_ucontext* ibuctx, ib_pd* pd, ib_qp_init_attr& attr, ib_udata& udata,
                                    int& err) {
  auto* uctx = static_cast<irdma_ucontext*>(ibuctx);
  if ((err = validate_qp_attrs(attr))) return nullptr;
  irdma_create_qp_req req{};
  // A reply without qp_caps is an older provider's, which Linux still answers.
  if (udata.inlen < sizeof req || udata.outlen < offsetof(irdma_create_qp_resp, qp_caps)) {
    err = -EINVAL;
    return nullptr;
  }
  ib_copy_from_udata(&req, udata, sizeof req);
  if (!attr.send_cq || !attr.recv_cq) {
    err = -EINVAL;
    return nullptr;
  }
  irdma_mr* mem = irdma_get_pbl(uctx, req.user_wqe_bufs, IRDMA_MEMREG_TYPE_QP);
  if (!mem) {
    err = -ENODATA;
    return nullptr;
  }
  const uint8_t sqshift = irdma_get_wqe_shift(attr.cap.max_send_sge + 1, attr.cap.max_inline_data);
  const uint8_t rqshift = irdma_get_wqe_shift(attr.cap.max_recv_sge, 0);
  const uint64_t sq_quanta = uint64_t(attr.cap.max_send_wr) << sqshift;
  const uint64_t rq_quanta = uint64_t(attr.cap.max_recv_wr) << rqshift;
  const std::vector<uint64_t>& blocks = mem->umem->dma_blocks;
  if (!power_of_two(sq_quanta) || !power_of_two(rq_quanta) || sq_quanta < IRDMA_MIN_WQ_SIZE ||
      sq_quanta > IRDMA_MAX_WQ_QUANTA || rq_quanta > IRDMA_MAX_WQ_QUANTA ||
      sq_quanta * IRDMA_QP_WQE_MIN_SIZE > uint64_t(mem->sq_pages) * kPage ||
      rq_quanta * IRDMA_QP_WQE_MIN_SIZE > uint64_t(mem->rq_pages) * kPage) {
    err = -EINVAL;
    return nullptr;
  }
  const std::vector<uint64_t> rq_blocks(blocks.begin() + mem->sq_pages, blocks.end());
  if (!irdma_dma_contiguous(blocks, mem->sq_pages) || !irdma_dma_contiguous(rq_blocks, mem->rq_pages)) {
    err = -EOPNOTSUPP;
    return nullptr;
  }
  const int64_t qp_num = rf_.alloc_rsrc(rf_.allocated_qps, rf_.next_qp, 2);
  if (qp_num < 0) {
    err = int(qp_num);
    return nullptr;
  }
  auto qp = std::make_unique<irdma_qp>();
  qp->lock = hw().exec.make_lock();
  qp->user_mode = true;
  qp->qp_num = uint32_t(qp_num);
  qp->qp_type = attr.qp_type;
  qp->pd_id = pd->pd_id;
  qp->send_cq = attr.send_cq;
  qp->recv_cq = attr.recv_cq;
  qp->init_attr = attr;
  irdma_qp_uk& q = qp->qp_uk;  // its sizes only: the rings are the application's
  q.qp_id = uint32_t(qp_num);
  q.qp_type = attr.qp_type == IB_QPT_UD ? IRDMA_QP_TYPE_ROCE_UD : IRDMA_QP_TYPE_ROCE_RC;
  q.hw_rev = caps().hw_rev;
  q.sq_ring.size = uint32_t(sq_quanta);
  q.rq_ring.size = attr.cap.max_recv_wr;
  q.rq_shift = rqshift;
  q.compl_ctx = req.user_compl_ctx;
  q.back_qp = static_cast<ib_qp*>(qp.get());
  qp->sq_pa = blocks[0];
  qp->rq_pa = blocks[mem->sq_pages];
  qp->shadow_pa = blocks[size_t(mem->sq_pages) + mem->rq_pages];
  qp->host_ctx = hw().dma.alloc_coherent(IRDMA_QP_CTX_SIZE_BYTES, 64);
  if (!qp->host_ctx) {
    rf_.free_rsrc(rf_.allocated_qps, uint32_t(qp_num));
    err = -ENOMEM;
    return nullptr;
  }
  write_qp_ctx(qp.get(), 0, 0);
  if ((err = create_qp_cmd(qp.get()))) {
    hw().dma.free_coherent(qp->host_ctx);
    rf_.free_rsrc(rf_.allocated_qps, uint32_t(qp_num));
    return nullptr;
  }
  publish_qp(qp.get(), attr);  // for its asynchronous events
  qp->send_cq->usecnt++;
  qp->recv_cq->usecnt++;
  irdma_create_qp_resp resp{};
  resp.qp_id = uint32_t(qp_num);
  resp.actual_sq_size = attr.cap.max_send_wr;
  resp.actual_rq_size = attr.cap.max_recv_wr;
  resp.qp_caps = attr.qp_type == IB_QPT_RC ? IRDMA_WRITE_WITH_IMM | IRDMA_SEND_WITH_IMM | IRDMA_ROCE
                                           : IRDMA_SEND_WITH_IMM | IRDMA_ROCE;
  if ((err = ib_copy_to_udata(udata, &resp, sizeof resp))) {
    destroy_user_qp(qp.release());
    return nullptr;
  }
  return qp.release();
}

// What the device must know of the attributes (the peer, the QKEY) goes to it with
// MODIFY_QP; a move to the error state flushes both queues, the application's CQs getting
// a flush completion for each WQE outstanding.
int irdma_device::modify_user_qp(ib_qp* ibqp, const ib_qp_attr& attr, uint32_t mask) {
  auto* qp = static_cast<irdma_qp*>(ibqp);
  const ib_qp_state cur = (mask & IB_QP_CUR_STATE) ? attr.cur_qp_state : qp->attr.qp_state;
  const ib_qp_state next = (mask & IB_QP_STATE) ? attr.qp_state : cur;
  if (!ib_modify_qp_is_ok(cur, next, qp->qp_type, mask)) return -EINVAL;
  if ((mask & IB_QP_PORT) && attr.port_num != 1) return -EINVAL;
  if ((mask & IB_QP_PKEY_INDEX) && attr.pkey_index >= IRDMA_PKEY_TBL_SZ) return -EINVAL;
  // RoCE addresses by GID: an address vector without one names nobody.
  if ((mask & IB_QP_AV) &&
      (!(attr.ah_attr.ah_flags & IB_AH_GRH) || attr.ah_attr.sgid_index >= IRDMA_ROCE_GID_TBL_LEN))
    return -EINVAL;
  if ((mask & IB_QP_MAX_QP_RD_ATOMIC) && attr.max_rd_atomic > IRDMA_MAX_ORD_SIZE) return -EINVAL;
  if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) && attr.max_dest_rd_atomic > IRDMA_MAX_IRD_SIZE) return -EINVAL;

  ib_qp_attr updated = qp->attr;
  if (mask & IB_QP_STATE) updated.qp_state = next;
  if (mask & IB_QP_ACCESS_FLAGS) updated.qp_access_flags = attr.qp_access_flags;
  if (mask & IB_QP_PKEY_INDEX) updated.pkey_index = attr.pkey_index;
  if (mask & IB_QP_PORT) updated.port_num = attr.port_num;
  if (mask & IB_QP_QKEY) updated.qkey = attr.qkey;
  if (mask & IB_QP_AV) updated.ah_attr = attr.ah_attr;
  if (mask & IB_QP_PATH_MTU) updated.path_mtu = attr.path_mtu;
  if (mask & IB_QP_TIMEOUT) updated.timeout = attr.timeout;
  if (mask & IB_QP_RETRY_CNT) updated.retry_cnt = attr.retry_cnt;
  if (mask & IB_QP_RNR_RETRY) updated.rnr_retry = attr.rnr_retry;
  if (mask & IB_QP_RQ_PSN) updated.rq_psn = attr.rq_psn;
  if (mask & IB_QP_SQ_PSN) updated.sq_psn = attr.sq_psn;
  if (mask & IB_QP_MAX_QP_RD_ATOMIC) updated.max_rd_atomic = attr.max_rd_atomic;
  if (mask & IB_QP_MAX_DEST_RD_ATOMIC) updated.max_dest_rd_atomic = attr.max_dest_rd_atomic;
  if (mask & IB_QP_MIN_RNR_TIMER) updated.min_rnr_timer = attr.min_rnr_timer;
  if (mask & IB_QP_DEST_QPN) updated.dest_qp_num = attr.dest_qp_num;
  if (mask & IB_QP_PATH_MIG_STATE) updated.path_mig_state = attr.path_mig_state;
  if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY) updated.en_sqd_async_notify = attr.en_sqd_async_notify;

  int ret = 0;
  if (next == IB_QPS_ERR && cur != IB_QPS_ERR) {
    ret = irdma_flush_wqes(qp);
  } else if ((mask & (IB_QP_DEST_QPN | IB_QP_QKEY)) || ((mask & IB_QP_STATE) && next != IB_QPS_RESET)) {
    write_qp_ctx(qp, updated.dest_qp_num, updated.qkey);
    ret = modify_qp_cmd(qp);
  }
  if (!ret) qp->attr = updated;
  return ret;
}

int irdma_device::query_user_qp(ib_qp* ibqp, ib_qp_attr* attr, ib_qp_init_attr* init) {
  auto* qp = static_cast<irdma_qp*>(ibqp);
  *attr = qp->attr;
  attr->cur_qp_state = qp->attr.qp_state;
  attr->cap = qp->init_attr.cap;
  *init = qp->init_attr;
  return 0;
}

// The registration under the queues stays until DEREG_MR, as the provider deregisters it
// after this.
int irdma_device::destroy_user_qp(ib_qp* ibqp) {
  auto* qp = static_cast<irdma_qp*>(ibqp);
  if (const int ret = destroy_qp_cmd(qp)) return ret;
  unpublish_qp(qp);
  release_qp(qp);
  return 0;
}

// RoCE reaches a peer by its GID, through one of this port's GIDs.
ib_ah* irdma_device::create_user_ah(ib_pd* /*pd*/, const rdma_ah_attr& attr, ib_udata& udata, int& err) {
  if (!(attr.ah_flags & IB_AH_GRH) || attr.sgid_index >= IRDMA_ROCE_GID_TBL_LEN) {
    err = -EINVAL;
    return nullptr;
  }
  const int64_t id = rf_.alloc_rsrc(rf_.allocated_ahs, rf_.next_ah, 1);
  if (id < 0) {
    err = int(id);
    return nullptr;
  }
  auto ah = std::make_unique<irdma_ah>();
  ah->attr = attr;
  ah->ah_id = uint32_t(id);
  const irdma_create_ah_resp resp{ah->ah_id, {}};
  if ((err = ib_copy_to_udata(udata, &resp, sizeof resp))) {
    rf_.free_rsrc(rf_.allocated_ahs, ah->ah_id);
    return nullptr;
  }
  return ah.release();
}

int irdma_device::destroy_user_ah(ib_ah* ibah) {
  auto* ah = static_cast<irdma_ah*>(ibah);
  rf_.free_rsrc(rf_.allocated_ahs, ah->ah_id);
  delete ah;
  return 0;
}

}  // namespace irdma
