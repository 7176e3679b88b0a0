// Memory keys: regions for fast registration and type-1 windows, allocated through the CQP
// (ALLOC_STAG / DEALLOC_STAG), registered and bound by work requests (IB_WR_REG_MR,
// IB_WR_BIND_MW), page lists kept in a pool the device reads (the HMC's PBLE object); and
// user memory (irdma_reg_user_mr): regions registered through the CQP (REG_MR), QP and CQ
// memory held for the create that names it.
#include <algorithm>
#include <cerrno>

#include "driver/irdma/irdma_abi.h"
#include "driver/irdma/irdma_device.h"

namespace irdma {

using namespace ibcore;

namespace {

constexpr uint64_t kPage = 4096;

uint64_t pages_spanned(uint64_t addr, uint64_t len) {
  return len ? ((addr % kPage) + len + kPage - 1) / kPage : 0;
}

}  // namespace

// irdma_get_mr_access: local read always; remote rights imply the local ones.
uint8_t irdma_get_mr_access(int access) {
  uint8_t rights = IRDMA_ACCESS_FLAGS_LOCALREAD;
  if (access & IB_ACCESS_LOCAL_WRITE) rights |= IRDMA_ACCESS_FLAGS_LOCALWRITE;
  if (access & IB_ACCESS_REMOTE_WRITE) rights |= IRDMA_ACCESS_FLAGS_REMOTEWRITE;
  if (access & IB_ACCESS_REMOTE_READ) rights |= IRDMA_ACCESS_FLAGS_REMOTEREAD;
  if (access & IB_ACCESS_MW_BIND) rights |= IRDMA_ACCESS_FLAGS_BIND_WINDOW;
  return rights;
}

namespace {

constexpr uint64_t kMaxUserMrSize = 0x200000000000ull;  // what irdma registers at most

// First fit of `n` consecutive free entries; -ENOMEM when there is no such run.
int64_t alloc_run(std::vector<bool>& used, uint32_t n) {
  uint32_t run = 0;
  for (uint32_t i = 0; i < used.size(); i++) {
    run = used[i] ? 0 : run + 1;
    if (run == n) {
      std::fill(used.begin() + (i + 1 - n), used.begin() + (i + 1), true);
      return i + 1 - n;
    }
  }
  return -ENOMEM;
}

}  // namespace

bool irdma_dma_contiguous(const std::vector<uint64_t>& blocks, size_t n) {
  for (size_t i = 1; i < n && i < blocks.size(); i++)
    if (blocks[i] != blocks[0] + i * kPage) return false;
  return true;
}

ErrPtr<irdma_pd> irdma_device::alloc_pd() {
  const int64_t id = rf_.alloc_rsrc(rf_.allocated_pds, rf_.next_pd, 1);
  if (id < 0) return ErrPtr<irdma_pd>::error(int(id));
  auto pd = std::make_unique<irdma_pd>();
  pd->pd_id = uint32_t(id);
  return pd.release();
}

int irdma_device::dealloc_pd(irdma_pd* pd) {
  rf_.free_rsrc(rf_.allocated_pds, pd->pd_id);
  delete pd;
  return 0;
}

// A user context's PD: its id goes back in irdma_alloc_pd_resp.
ib_pd* irdma_device::alloc_user_pd(ib_ucontext* /*uctx*/, ib_udata& udata, int& err) {
  if (udata.outlen < sizeof(irdma_alloc_pd_resp)) {
    err = -EINVAL;
    return nullptr;
  }
  ErrPtr<irdma_pd> pd = alloc_pd();
  if ((err = pd.err())) return nullptr;
  irdma_alloc_pd_resp resp{};
  resp.pd_id = pd->pd_id;
  if ((err = ib_copy_to_udata(udata, &resp, sizeof resp))) {
    dealloc_pd(pd.get());
    return nullptr;
  }
  return pd.get();
}

int irdma_device::dealloc_user_pd(ib_pd* pd) { return dealloc_pd(static_cast<irdma_pd*>(pd)); }

int irdma_device::alloc_stag(uint32_t index, bool window, uint64_t max_len, uint32_t pd_id) {
  return cqp().exec(IRDMA_CQP_OP_ALLOC_STAG, [&](uint64_t* wqe) {
    wqe[1] = FIELD_PREP(IRDMA_CQPSQ_STAG_STAGLEN, max_len) | FIELD_PREP(IRDMA_CQPSQ_STAG_PDID, pd_id);
    wqe[2] = FIELD_PREP(IRDMA_CQPSQ_STAG_IDX, index);
    return window ? IRDMA_CQPSQ_STAG_MWTYPE  // type 1
                  : IRDMA_CQPSQ_STAG_MR | IRDMA_CQPSQ_STAG_REMACCENABLED;
  });
}

int irdma_device::dealloc_stag(uint32_t index, bool window) {
  return cqp().exec(IRDMA_CQP_OP_DEALLOC_STAG, [&](uint64_t* wqe) {
    wqe[2] = FIELD_PREP(IRDMA_CQPSQ_STAG_IDX, index);
    return window ? 0 : IRDMA_CQPSQ_STAG_MR;
  });
}

ErrPtr<irdma_mr> irdma_device::alloc_mr(uint32_t max_num_sg, ib_pd* pd) {
  if (max_num_sg == 0 || max_num_sg > caps().pble_entries) return ErrPtr<irdma_mr>::error(-EINVAL);
  const int64_t index = rf_.alloc_rsrc(rf_.allocated_mrs, rf_.next_mr, 1);
  if (index < 0) return ErrPtr<irdma_mr>::error(int(index));
  int64_t pble;
  {
    std::lock_guard<hal::Lock> guard(*rf_.rsrc_lock);
    pble = alloc_run(rf_.allocated_pbles, max_num_sg);
  }
  if (pble < 0) {
    rf_.free_rsrc(rf_.allocated_mrs, uint32_t(index));
    return ErrPtr<irdma_mr>::error(int(pble));
  }
  auto mr = std::make_unique<irdma_mr>();
  mr->stag_index = uint32_t(index);
  mr->max_pages = max_num_sg;
  mr->pble_index = uint32_t(pble);
  mr->lkey = mr->rkey = uint32_t(index) << 8;
  mr->pd_id = pd ? pd->pd_id : 0;
  if (int ret = alloc_stag(mr->stag_index, false, uint64_t(max_num_sg) * kPage, mr->pd_id)) {
    std::lock_guard<hal::Lock> guard(*rf_.rsrc_lock);
    rf_.free_rsrc_locked(rf_.allocated_mrs, uint32_t(index));
    std::fill_n(rf_.allocated_pbles.begin() + pble, max_num_sg, false);
    return ErrPtr<irdma_mr>::error(ret);
  }
  return mr.release();
}

int irdma_device::map_mr_sg(irdma_mr* mr, uint64_t dma_addr, uint64_t length) {
  const uint64_t n = pages_spanned(dma_addr, length);
  if (n == 0 || n > mr->max_pages) return -EINVAL;
  uint64_t* list = rf_.sc_dev.pble_list(mr->pble_index);
  const uint64_t first = dma_addr & ~(kPage - 1);
  for (uint64_t i = 0; i < n; i++) list[i] = first + i * kPage;
  mr->iova = dma_addr;
  mr->length = length;
  mr->npages = uint32_t(n);
  return int(n);
}

int irdma_device::dereg_mr(irdma_mr* mr) {
  if (int ret = dealloc_stag(mr->stag_index, false)) return ret;
  {
    std::lock_guard<hal::Lock> guard(*rf_.rsrc_lock);
    rf_.free_rsrc_locked(rf_.allocated_mrs, mr->stag_index);
    std::fill_n(rf_.allocated_pbles.begin() + mr->pble_index, mr->max_pages, false);
  }
  delete mr;
  return 0;
}

ErrPtr<irdma_mw> irdma_device::alloc_mw(ib_pd* pd) {
  const int64_t index = rf_.alloc_rsrc(rf_.allocated_mrs, rf_.next_mr, 1);
  if (index < 0) return ErrPtr<irdma_mw>::error(int(index));
  if (int ret = alloc_stag(uint32_t(index), true, 0, pd ? pd->pd_id : 0)) {
    rf_.free_rsrc(rf_.allocated_mrs, uint32_t(index));
    return ErrPtr<irdma_mw>::error(ret);
  }
  auto mw = std::make_unique<irdma_mw>();
  mw->stag_index = uint32_t(index);
  mw->rkey = uint32_t(index) << 8;
  return mw.release();
}

// A user window: type 1, bound by the application's own BIND_MW work requests (the v44
// provider offers no other type).
ib_mw* irdma_device::alloc_user_mw(ib_pd* pd, uint8_t type, int& err) {
  if (type != 1) {
    err = -EOPNOTSUPP;
    return nullptr;
  }
  ErrPtr<irdma_mw> mw = alloc_mw(pd);
  err = mw.err();
  return err ? nullptr : mw.get();
}

int irdma_device::dealloc_user_mw(ib_mw* mw) { return dealloc_mw(static_cast<irdma_mw*>(mw)); }

int irdma_device::dealloc_mw(irdma_mw* mw) {
  if (int ret = dealloc_stag(mw->stag_index, true)) return ret;
  rf_.free_rsrc(rf_.allocated_mrs, mw->stag_index);
  delete mw;
  return 0;
}

int irdma_device::post_reg_mr(irdma_qp* qp, const ib_send_wr& wr) {
  auto* mr = static_cast<irdma_mr*>(wr.reg.mr);
  if (!mr || wr.reg.key >> 8 != mr->stag_index || mr->npages == 0) return -EINVAL;
  irdma_fast_reg_stag_info info;
  info.wr_id = wr.wr_id;
  info.signaled = wr.send_flags & IB_SEND_SIGNALED;
  info.stag = wr.reg.key;
  info.va = mr->iova;
  info.total_len = mr->length;
  info.access_rights = irdma_get_mr_access(wr.reg.access);
  info.remote_atomics = caps().atomics && (wr.reg.access & IB_ACCESS_REMOTE_ATOMIC);
  info.reg_addr_pa = *rf_.sc_dev.pble_list(mr->pble_index);
  info.first_pm_pbl_index = mr->pble_index;
  info.chunk_size = mr->npages > 1;
  return irdma_sc_mr_fast_register(&qp->qp_uk, info);
}

int irdma_device::post_bind_mw(irdma_qp* qp, const ib_send_wr& wr) {
  auto* mw = static_cast<irdma_mw*>(wr.bind.mw);
  if (!mw || !wr.bind.mr || wr.bind.rkey >> 8 != mw->stag_index) return -EINVAL;
  irdma_bind_window info;
  info.wr_id = wr.wr_id;
  info.signaled = wr.send_flags & IB_SEND_SIGNALED;
  info.mr_stag = wr.bind.mr->rkey;
  info.mw_stag = wr.bind.rkey;
  info.va = wr.bind.addr;
  info.len = wr.bind.length;
  info.ena_reads = wr.bind.access & IB_ACCESS_REMOTE_READ;
  info.ena_writes = wr.bind.access & IB_ACCESS_REMOTE_WRITE;
  info.remote_atomics = caps().atomics && (wr.bind.access & IB_ACCESS_REMOTE_ATOMIC);
  return irdma_uk_mw_bind(&qp->qp_uk, info);
}


irdma_mr* irdma_device::irdma_get_pbl(irdma_ucontext* uctx, uint64_t user_base, uint16_t reg_type) {
  std::lock_guard<hal::Lock> guard(*uctx->lock);
  auto& list = reg_type == IRDMA_MEMREG_TYPE_QP ? uctx->qp_reg_mem_list : uctx->cq_reg_mem_list;
  for (auto it = list.begin(); it != list.end(); ++it)
    if ((*it)->iova == user_base) {
      irdma_mr* mr = *it;
      list.erase(it);
      mr->listed = false;
      return mr;
    }
  return nullptr;
}

// The device's REG_MR: a VA-based region of 4 KiB pages, at one DMA address when they are
// contiguous, else through a page list.
int irdma_device::irdma_hwreg_mr(irdma_mr* mr, uint8_t rights) {
  const std::vector<uint64_t>& blocks = mr->umem->dma_blocks;
  const bool chunked = mr->npages > 1 && !irdma_dma_contiguous(blocks, blocks.size());
  if (chunked) {
    int64_t pble;
    {
      std::lock_guard<hal::Lock> guard(*rf_.rsrc_lock);
      pble = alloc_run(rf_.allocated_pbles, mr->npages);
    }
    if (pble < 0) return int(pble);
    mr->pble_index = uint32_t(pble);
    mr->max_pages = mr->npages;
    std::copy(blocks.begin(), blocks.end(), rf_.sc_dev.pble_list(mr->pble_index));
  }
  const int ret = cqp().exec(IRDMA_CQP_OP_REG_MR, [&](uint64_t* wqe) {
    wqe[0] = mr->iova;
    wqe[1] = FIELD_PREP(IRDMA_CQPSQ_STAG_STAGLEN, mr->length) | FIELD_PREP(IRDMA_CQPSQ_STAG_PDID, mr->pd_id);
    wqe[2] = FIELD_PREP(IRDMA_CQPSQ_STAG_KEY, mr->lkey & 0xff) | FIELD_PREP(IRDMA_CQPSQ_STAG_IDX, mr->stag_index);
    wqe[4] = chunked ? 0 : blocks[0];
    wqe[6] = chunked ? FIELD_PREP(IRDMA_CQPSQ_STAG_FIRSTPMPBLIDX, mr->pble_index) : 0;
    return IRDMA_CQPSQ_STAG_MR | FIELD_PREP(IRDMA_CQPSQ_STAG_LPBLSIZE, chunked ? 1 : 0) |
           FIELD_PREP(IRDMA_CQPSQ_STAG_ARIGHTS, rights) | IRDMA_CQPSQ_STAG_VABASEDTO |
           (rights & (IRDMA_ACCESS_FLAGS_REMOTEREAD_ONLY | IRDMA_ACCESS_FLAGS_REMOTEWRITE_ONLY)
                ? IRDMA_CQPSQ_STAG_REMACCENABLED
                : 0);
  });
  if (ret && mr->max_pages) {
    std::lock_guard<hal::Lock> guard(*rf_.rsrc_lock);
    std::fill_n(rf_.allocated_pbles.begin() + mr->pble_index, mr->max_pages, false);
    mr->max_pages = 0;
  }
  return ret;
}

ib_mr* irdma_device::reg_user_mr(ib_ucontext* ibuctx, ib_pd* pd, uint64_t start, uint64_t length, uint64_t virt,
                                 int access, ib_udata& udata, int& err) {
  auto* uctx = static_cast<irdma_ucontext*>(ibuctx);
  irdma_mem_reg_req req{};
  if (length > kMaxUserMrSize || udata.inlen < sizeof req || !udata.mm) {
    err = -EINVAL;
    return nullptr;
  }
  ib_copy_from_udata(&req, udata, sizeof req);
  auto mr = std::make_unique<irdma_mr>();
  mr->umem = udata.mm->ib_umem_get(start, length, access & IB_ACCESS_LOCAL_WRITE, err);
  if (!mr->umem) return nullptr;
  mr->reg_type = req.reg_type;
  mr->uctx = uctx;
  mr->iova = virt;
  mr->length = length;
  mr->pd_id = pd->pd_id;
  mr->npages = uint32_t(mr->umem->dma_blocks.size());
  switch (req.reg_type) {
    case IRDMA_MEMREG_TYPE_QP:
    case IRDMA_MEMREG_TYPE_CQ: {
      const bool qp = req.reg_type == IRDMA_MEMREG_TYPE_QP;
      // With CQ_RESIZE the CQ's shadow area is a registration of its own.
      const uint32_t needed = qp ? req.sq_pages + req.rq_pages + 1u : req.cq_pages + (caps().cq_resize ? 0u : 1u);
      if (needed > mr->npages) {
        err = -EINVAL;
        return nullptr;
      }
      mr->sq_pages = req.sq_pages;
      mr->rq_pages = req.rq_pages;
      mr->cq_pages = req.cq_pages;
      std::lock_guard<hal::Lock> guard(*uctx->lock);
      (qp ? uctx->qp_reg_mem_list : uctx->cq_reg_mem_list).push_back(mr.get());
      mr->listed = true;
      return mr.release();  // no key: lkey and rkey stay 0
    }
    case IRDMA_MEMREG_TYPE_MEM: break;
    default: err = -EINVAL; return nullptr;
  }
  const int64_t index = rf_.alloc_rsrc(rf_.allocated_mrs, rf_.next_mr, 1);
  if (index < 0) {
    err = int(index);
    return nullptr;
  }
  mr->stag_index = uint32_t(index);
  mr->lkey = mr->rkey = uint32_t(index) << 8;
  if ((err = irdma_hwreg_mr(mr.get(), irdma_get_mr_access(access)))) {
    rf_.free_rsrc(rf_.allocated_mrs, uint32_t(index));
    return nullptr;
  }
  return mr.release();
}

// QP and CQ memory leaves its context's list if no create took it; a region's key goes
// through the CQP first, and stays if the device refuses.
int irdma_device::dereg_user_mr(ib_mr* ibmr) {
  auto* mr = static_cast<irdma_mr*>(ibmr);
  if (mr->reg_type != IRDMA_MEMREG_TYPE_MEM) {
    if (mr->listed) {
      auto* uctx = mr->uctx;
      std::lock_guard<hal::Lock> guard(*uctx->lock);
      auto& list = mr->reg_type == IRDMA_MEMREG_TYPE_QP ? uctx->qp_reg_mem_list : uctx->cq_reg_mem_list;
      list.erase(std::find(list.begin(), list.end(), mr));
    }
    delete mr;
    return 0;
  }
  if (int ret = dealloc_stag(mr->stag_index, false)) return ret;
  {
    std::lock_guard<hal::Lock> guard(*rf_.rsrc_lock);
    rf_.free_rsrc_locked(rf_.allocated_mrs, mr->stag_index);
    std::fill_n(rf_.allocated_pbles.begin() + mr->pble_index, mr->max_pages, false);
  }
  delete mr;
  return 0;
}

}  // namespace irdma
