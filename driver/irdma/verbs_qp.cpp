// QP verbs: create, connect (modify to RTS), destroy, post_send, post_recv.
#include <algorithm>
#include <cerrno>
#include <vector>

#include "driver/irdma/irdma_device.h"

namespace irdma {

using namespace ibcore;

namespace {

uint32_t log2u(uint32_t v) {
  uint32_t l = 0;
  while (v >>= 1) l++;
  return l;
}

uint32_t rq_bytes(const irdma_qp_uk& q) { return q.rq_ring.size * (32u << q.rq_shift); }

// qword3 of a CQP command on a QP.
uint64_t qp_cmd_header(const irdma_qp_uk& q) {
  return FIELD_PREP(IRDMA_CQPSQ_QP_QPID, q.qp_id) | IRDMA_CQPSQ_QP_CQNUMVALID |
         FIELD_PREP(IRDMA_CQPSQ_QP_QPTYPE, q.qp_type);
}

}  // namespace

void irdma_device::write_qp_ctx(irdma_qp* qp, uint32_t dest_qp_num, uint32_t qkey) {
  const irdma_qp_uk& q = qp->qp_uk;
  auto* ctx = static_cast<uint64_t*>(qp->host_ctx.cpu);
  // Queue sizes are encoded as log2(quanta) - 2.
  ctx[0] = FIELD_PREP(IRDMAQPC_RQWQESIZE, q.rq_shift) | FIELD_PREP(IRDMAQPC_PDIDXHI, qp->pd_id >> 16);
  ctx[IRDMAQPC_PDIDX_QWORD] = FIELD_PREP(IRDMAQPC_PDIDX, qp->pd_id);  // bits 15:0; PDIDXHI has the rest
  ctx[IRDMAQPC_SQADDR_QWORD] = qp->sq_pa;
  ctx[IRDMAQPC_RQADDR_QWORD] = qp->rq_pa;
  ctx[IRDMAQPC_SIZES_QWORD] =
      FIELD_PREP(IRDMAQPC_RQSIZE, log2u(q.rq_ring.size << q.rq_shift) - 2) |
      FIELD_PREP(IRDMAQPC_SQSIZE, log2u(q.sq_ring.size) - 2);
  ctx[IRDMAQPC_DESTQP_QWORD] =
      FIELD_PREP(IRDMAQPC_DESTQP, dest_qp_num) | FIELD_PREP(IRDMAQPC_QKEY, qkey);
  ctx[IRDMAQPC_CQNUM_QWORD] =
      FIELD_PREP(IRDMAQPC_TXCQNUM, static_cast<irdma_cq*>(qp->send_cq)->cq_num) |
      FIELD_PREP(IRDMAQPC_RXCQNUM, static_cast<irdma_cq*>(qp->recv_cq)->cq_num);
  ctx[IRDMAQPC_QPCOMPCTX_QWORD] = q.compl_ctx;
}

int irdma_device::create_qp_cmd(irdma_qp* qp) {
  return cqp().exec(IRDMA_CQP_OP_CREATE_QP, [&](uint64_t* wqe) {
    wqe[2] = qp->host_ctx.iova;
    wqe[5] = qp->shadow_pa;
    return qp_cmd_header(qp->qp_uk);
  });
}

int irdma_device::modify_qp_cmd(irdma_qp* qp) {
  return cqp().exec(IRDMA_CQP_OP_MODIFY_QP, [&](uint64_t* wqe) {
    wqe[2] = qp->host_ctx.iova;
    return qp_cmd_header(qp->qp_uk);
  });
}

int irdma_device::destroy_qp_cmd(irdma_qp* qp) {
  return cqp().exec(IRDMA_CQP_OP_DESTROY_QP, [&](uint64_t* wqe) {
    wqe[2] = qp->host_ctx.iova;
    return qp_cmd_header(qp->qp_uk);
  });
}

ErrPtr<irdma_qp> irdma_device::create_qp(ib_qp_init_attr& attr, ib_pd* pd) {
  if (!attr.send_cq || !attr.recv_cq || attr.send_cq->device != this ||
      attr.recv_cq->device != this)
    return ErrPtr<irdma_qp>::error(-EINVAL);
  if (attr.qp_type != IB_QPT_RC && attr.qp_type != IB_QPT_UD)
    return ErrPtr<irdma_qp>::error(-EOPNOTSUPP);
  auto qp = std::make_unique<irdma_qp>();
  qp->lock = hw().exec.make_lock();
  irdma_qp_uk& q = qp->qp_uk;
  const int64_t qp_num = rf_.alloc_rsrc(rf_.allocated_qps, rf_.next_qp, 2);
  if (qp_num < 0) return ErrPtr<irdma_qp>::error(int(qp_num));
  if (int ret = irdma_uk_qp_init(&q, uint32_t(qp_num), attr.cap.max_send_wr, attr.cap.max_recv_wr,
                                 attr.cap.max_send_sge, attr.cap.max_recv_sge)) {
    rf_.free_rsrc(rf_.allocated_qps, uint32_t(qp_num));
    return ErrPtr<irdma_qp>::error(ret);
  }
  q.qp_type = attr.qp_type == IB_QPT_UD ? IRDMA_QP_TYPE_ROCE_UD : IRDMA_QP_TYPE_ROCE_RC;
  q.hw_rev = caps().hw_rev;
  q.db = &hw().bar0;
  q.back_qp = static_cast<ib_qp*>(qp.get());
  {
    std::lock_guard<hal::Lock> guard(*rf_.rsrc_lock);
    q.compl_ctx = irdma_obj_cookie(++rf_.obj_generation, uint32_t(qp_num));
  }
  qp->qp_num = uint32_t(qp_num);
  qp->qp_type = attr.qp_type;
  qp->pd_id = pd ? pd->pd_id : 0;
  qp->send_cq = attr.send_cq;
  qp->recv_cq = attr.recv_cq;

  const uint64_t sq_bytes = uint64_t(q.sq_ring.size) * IRDMA_QP_WQE_MIN_SIZE;
  qp->queues = hw().dma.alloc_coherent(sq_bytes + rq_bytes(q) + IRDMA_SHADOW_AREA_SIZE_BYTES, 4096);
  qp->host_ctx = hw().dma.alloc_coherent(IRDMA_QP_CTX_SIZE_BYTES, 64);
  const auto release = [&] {
    if (qp->queues) hw().dma.free_coherent(qp->queues);
    if (qp->host_ctx) hw().dma.free_coherent(qp->host_ctx);
    rf_.free_rsrc(rf_.allocated_qps, uint32_t(qp_num));
  };
  if (!qp->queues || !qp->host_ctx) {
    release();
    return ErrPtr<irdma_qp>::error(-ENOMEM);
  }
  auto* base = static_cast<uint8_t*>(qp->queues.cpu);
  q.sq_base = reinterpret_cast<uint64_t*>(base);
  q.rq_base = reinterpret_cast<uint64_t*>(base + sq_bytes);
  q.shadow_area = reinterpret_cast<uint64_t*>(base + sq_bytes + rq_bytes(q));
  qp->sq_pa = qp->queues.iova;
  qp->rq_pa = qp->sq_pa + sq_bytes;
  qp->shadow_pa = qp->rq_pa + rq_bytes(q);
  write_qp_ctx(qp.get(), 0, 0);
  if (const int ret = create_qp_cmd(qp.get())) {
    release();
    return ErrPtr<irdma_qp>::error(ret);
  }
  publish_qp(qp.get(), attr);
  qp->send_cq->usecnt++;
  qp->recv_cq->usecnt++;
  attr.cap.max_send_wr = irdma_uk_sq_max_wrs(q);
  attr.cap.max_recv_wr = irdma_uk_rq_max_wrs(q);
  return qp.release();
}

int irdma_device::connect_qp(irdma_qp* qp, uint32_t dest_qp_num, uint32_t qkey) {
  write_qp_ctx(qp, dest_qp_num, qkey);
  return modify_qp_cmd(qp);
}

// CQEs still in the QP's CQs must not outlive it (spec G.3, D.8); this driver cleans the
// rings a resize retired too, each CQ locked.
void irdma_device::irdma_clean_cqes(irdma_qp* qp) {
  for (ib_cq* ibcq : {qp->send_cq, qp->recv_cq}) {
    auto* cq = static_cast<irdma_cq*>(ibcq);
    std::lock_guard<hal::Lock> guard(*cq->lock);
    bump(rf_.stats.cqes_cleaned, irdma_uk_clean_cq(qp->qp_uk.compl_ctx, &cq->sc_cq));
    for (irdma_cq::retired_buf& b : cq->resize_list)
      bump(rf_.stats.cqes_cleaned, irdma_uk_clean_cq(qp->qp_uk.compl_ctx, &b.uk));
    if (qp->recv_cq == qp->send_cq) break;
  }
}

int irdma_device::destroy_qp(irdma_qp* qp) {
  WRITE_ONCE(qp->qp_uk.destroy_pending, true);
  irdma_clean_cqes(qp);
  if (const int ret = destroy_qp_cmd(qp)) {
    WRITE_ONCE(qp->qp_uk.destroy_pending, false);
    return ret;
  }
  // Again, now the device writes the QP no more: what it completed after the first clean
  // (on OS threads the device runs meanwhile) would otherwise poll, once the QP left the
  // table, as CQEs for no QP.
  irdma_clean_cqes(qp);
  free_qp(qp);
  return 0;
}

// The QP's flush notes, its flush work and its generated completions go with it. Polls see
// it no more once it is out of the table; one that found it before is over once its CQ's
// lock is free, so the last pass over the CQs also makes freeing it safe.
void irdma_device::free_qp(irdma_qp* qp) {
  const auto cqs = {static_cast<irdma_cq*>(qp->send_cq), static_cast<irdma_cq*>(qp->recv_cq)};
  for (irdma_cq* cq : cqs) {
    std::lock_guard<hal::Lock> guard(*cq->lock);
    auto& noted = cq->sc_cq.newly_flushed;
    noted.erase(std::remove(noted.begin(), noted.end(), &qp->qp_uk), noted.end());
  }
  // Out of the table before its flush work is cancelled: recover_from_reset schedules work only
  // for QPs in the table.
  unpublish_qp(qp);
  flush_wq_.cancel_sync(qp);
  for (irdma_cq* cq : cqs) {
    std::lock_guard<hal::Lock> guard(*cq->lock);
    auto& gen = cq->cmpl_generated;
    gen.erase(std::remove_if(gen.begin(), gen.end(),
                             [&](const irdma_cq_poll_info& r) { return r.qp_handle == &qp->qp_uk; }),
              gen.end());
  }
  release_qp(qp);
}

void irdma_device::publish_qp(irdma_qp* qp, const ib_qp_init_attr& attr) {
  qp->event_handler = attr.event_handler;
  std::lock_guard<hal::Lock> guard(*rf_.rsrc_lock);
  smp_store_release(rf_.qp_table[qp->qp_num], &qp->qp_uk);
}

// Handlers that took it from the table before it left go first (wait_for_completion).
void irdma_device::unpublish_qp(irdma_qp* qp) {
  {
    std::lock_guard<hal::Lock> guard(*rf_.rsrc_lock);
    smp_store_release(rf_.qp_table[qp->qp_num], static_cast<irdma_qp_uk*>(nullptr));
    rf_.free_rsrc_locked(rf_.allocated_qps, qp->qp_num);
  }
  while (qp->refcnt.load(std::memory_order_acquire)) hw().exec.delay_ns(1000);
}

void irdma_device::release_qp(irdma_qp* qp) {
  qp->send_cq->usecnt--;
  qp->recv_cq->usecnt--;
  if (qp->queues) hw().dma.free_coherent(qp->queues);  // a user QP's are the application's
  hw().dma.free_coherent(qp->host_ctx);
  delete qp;
}

int irdma_device::post_send(irdma_qp* qp, const ib_send_wr* wr, const ib_send_wr** bad_wr) {
  std::unique_lock<hal::Lock> guard(*qp->lock);
  int ret = 0;
  irdma_sge sges[16];
  for (; wr; wr = wr->next) {
    irdma_post_sq_info info;
    info.wr_id = wr->wr_id;
    info.signaled = wr->send_flags & IB_SEND_SIGNALED;
    const bool solicited = wr->send_flags & IB_SEND_SOLICITED;
    info.dest_qpn = wr->remote_qpn;
    info.dest_qkey = wr->remote_qkey;
    // A UD QP sends datagrams only.
    const bool ud = qp->qp_uk.qp_type == IRDMA_QP_TYPE_ROCE_UD;
    if (ud && wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM) {
      if (bad_wr) *bad_wr = wr;
      ret = -EINVAL;
      break;
    }
    switch (wr->opcode) {
      case IB_WR_SEND_WITH_IMM:
        info.imm_data_valid = true;
        info.imm_data = __builtin_bswap32(wr->ex.imm_data);  // ntohl
        [[fallthrough]];
      case IB_WR_SEND:
        info.op_type = solicited ? IRDMA_OP_TYPE_SEND_SOL : IRDMA_OP_TYPE_SEND;
        break;
      case IB_WR_SEND_WITH_INV:
        info.op_type = solicited ? IRDMA_OP_TYPE_SEND_SOL_INV : IRDMA_OP_TYPE_SEND_INV;
        info.remote_stag = wr->ex.invalidate_rkey;
        break;
      case IB_WR_RDMA_WRITE_WITH_IMM:
        info.imm_data_valid = true;
        info.imm_data = __builtin_bswap32(wr->ex.imm_data);  // ntohl
        [[fallthrough]];
      case IB_WR_RDMA_WRITE:
        info.op_type = solicited ? IRDMA_OP_TYPE_RDMA_WRITE_SOL : IRDMA_OP_TYPE_RDMA_WRITE;
        info.remote_stag = wr->rkey;
        info.remote_addr = wr->remote_addr;
        break;
      case IB_WR_RDMA_READ_WITH_INV:  // the sink's STag (its first SGE's) is invalidated
      case IB_WR_RDMA_READ:
        info.op_type = wr->opcode == IB_WR_RDMA_READ ? IRDMA_OP_TYPE_RDMA_READ
                                                     : IRDMA_OP_TYPE_RDMA_READ_INV_STAG;
        info.remote_stag = wr->rkey;
        info.remote_addr = wr->remote_addr;
        break;
      case IB_WR_LOCAL_INV:
        info.op_type = IRDMA_OP_TYPE_INV_STAG;
        info.remote_stag = wr->ex.invalidate_rkey;
        break;
      case IB_WR_REG_MR:
      case IB_WR_BIND_MW:
        if (qp->qp_uk.qp_type != IRDMA_QP_TYPE_ROCE_RC) ret = -EINVAL;
        break;
      case IB_WR_ATOMIC_FETCH_AND_ADD:
      case IB_WR_ATOMIC_CMP_AND_SWP:
        if (!caps().atomics) {
          ret = -EOPNOTSUPP;
          break;
        }
        info.op_type = wr->opcode == IB_WR_ATOMIC_FETCH_AND_ADD ? IRDMA_OP_TYPE_ATOMIC_FETCH_AND_ADD
                                                                : IRDMA_OP_TYPE_ATOMIC_COMPARE_AND_SWAP;
        info.remote_stag = wr->rkey;
        info.remote_addr = wr->remote_addr;
        info.atomic_data = wr->opcode == IB_WR_ATOMIC_FETCH_AND_ADD ? wr->compare_add : wr->swap;
        info.atomic_compare = wr->compare_add;
        break;
      default:
        ret = -EINVAL;
    }
    if (!ret && (wr->num_sge < 0 || wr->num_sge > 16)) ret = -EINVAL;
    if (!ret) {
      for (int i = 0; i < wr->num_sge; i++)
        sges[i] = {wr->sg_list[i].addr, wr->sg_list[i].length, wr->sg_list[i].lkey};
      info.sg_list = sges;
      info.num_sges = uint32_t(wr->num_sge);
      switch (wr->opcode) {
        case IB_WR_RDMA_WRITE:
        case IB_WR_RDMA_WRITE_WITH_IMM: ret = irdma_uk_rdma_write(&qp->qp_uk, info); break;
        case IB_WR_RDMA_READ_WITH_INV:
        case IB_WR_RDMA_READ: ret = irdma_uk_rdma_read(&qp->qp_uk, info); break;
        case IB_WR_REG_MR: ret = post_reg_mr(qp, *wr); break;
        case IB_WR_BIND_MW: ret = post_bind_mw(qp, *wr); break;
        case IB_WR_ATOMIC_FETCH_AND_ADD:
        case IB_WR_ATOMIC_CMP_AND_SWP: ret = irdma_uk_atomic(&qp->qp_uk, info); break;
        case IB_WR_LOCAL_INV: ret = irdma_uk_stag_local_invalidate(&qp->qp_uk, info); break;
        default: ret = irdma_uk_send(&qp->qp_uk, info);
      }
    }
    if (ret) {
      if (bad_wr) *bad_wr = wr;
      break;
    }
  }
  ring_sq(qp, guard);
  return ret;
}

// The device takes no more work from a flushed QP: it completes in software, the work
// scheduled once the QP is unlocked.
void irdma_device::ring_sq(irdma_qp* qp, std::unique_lock<hal::Lock>& guard) {
  if (!qp->flush_issued) {
    irdma_uk_qp_post_wr(&qp->qp_uk);
    return;
  }
  guard.unlock();
  flush_wq_.schedule(qp);
}

int irdma_device::post_nop(irdma_qp* qp, uint64_t wr_id, bool signaled) {
  std::unique_lock<hal::Lock> guard(*qp->lock);
  const int ret = irdma_uk_nop(&qp->qp_uk, wr_id, signaled);
  if (!ret) ring_sq(qp, guard);
  return ret;
}

int irdma_device::post_recv(irdma_qp* qp, const ib_recv_wr* wr, const ib_recv_wr** bad_wr) {
  std::unique_lock<hal::Lock> guard(*qp->lock);
  int ret = 0;
  irdma_sge sges[16];
  for (; wr; wr = wr->next) {
    ret = wr->num_sge < 0 || wr->num_sge > 16 ? -EINVAL : 0;
    if (!ret) {
      for (int i = 0; i < wr->num_sge; i++)
        sges[i] = {wr->sg_list[i].addr, wr->sg_list[i].length, wr->sg_list[i].lkey};
      ret = irdma_uk_post_receive(&qp->qp_uk, wr->wr_id, sges, uint32_t(wr->num_sge));
    }
    if (ret) {
      if (bad_wr) *bad_wr = wr;
      break;
    }
  }
  const bool flushed = qp->flush_issued;
  guard.unlock();
  if (flushed) flush_wq_.schedule(qp);
  return ret;
}

}  // namespace irdma
