#include "driver/core/cq_pool.h"

#include <algorithm>
#include <cerrno>
#include <list>

#include "driver/core/cq.h"

namespace ibcore {
namespace {

unsigned pool_vectors(const ib_device* dev) {
  return std::max(1u, std::min(dev->num_comp_vectors, dev->num_online_cpus));
}

unsigned pool_cq_size(const ib_device* dev, unsigned nr_cqe) {
  return std::min(unsigned(dev->attrs.max_cqe), std::max(nr_cqe, IB_MAX_SHARED_CQ_SZ));
}

// ib_alloc_cqs: one CQ per vector, made unlocked, spliced at the head of the pool as one
// batch.
int grow_pool(ib_device* dev, unsigned nr_cqe, ib_poll_context poll_ctx) {
  const unsigned size = pool_cq_size(dev, nr_cqe);
  std::list<ib_cq*> batch;
  for (unsigned vector = 0; vector < pool_vectors(dev); vector++) {
    auto cq = ib_alloc_cq(dev, nullptr, int(size), vector, poll_ctx);
    if (cq.is_err()) {
      for (ib_cq* done : batch) ib_free_cq(done);
      return cq.err();
    }
    cq->shared = true;
    batch.push_back(cq.get());
  }
  std::lock_guard<std::mutex> guard(dev->cq_pools_lock);
  auto& pool = dev->cq_pools[poll_ctx];
  pool.splice(pool.begin(), batch);
  return 0;
}

bool fits(const ib_cq* cq, unsigned nr_cqe) {
  return uint64_t(cq->cqe_used) + nr_cqe <= uint64_t(cq->cqe);
}

ib_cq* find_kernel_first_fit(ib_device* dev, unsigned nr_cqe, unsigned vector,
                             ib_poll_context poll_ctx) {
  for (ib_cq* cq : dev->cq_pools[poll_ctx])
    if (cq->comp_vector == vector && fits(cq, nr_cqe)) return cq;
  return nullptr;
}

// Ties go to list order, so the choice is reproducible.
ib_cq* find_least_used(ib_device* dev, unsigned nr_cqe, int vector,
                       ib_poll_context poll_ctx) {
  ib_cq* best = nullptr;
  for (ib_cq* cq : dev->cq_pools[poll_ctx]) {
    if (vector >= 0 && cq->comp_vector != unsigned(vector)) continue;
    if (!fits(cq, nr_cqe)) continue;
    if (!best || cq->cqe_used < best->cqe_used) best = cq;
  }
  return best;
}

}  // namespace

ErrPtr<ib_cq> ib_cq_pool_get(ib_device* dev, unsigned nr_cqe, int comp_vector_hint,
                             ib_poll_context poll_ctx) {
  if (poll_ctx < IB_POLL_SOFTIRQ || poll_ctx > IB_POLL_LAST_POOL_TYPE) {
    dev->warnings.warn("ib_cq_pool_get: poll context not poolable");
    return ErrPtr<ib_cq>::error(-EINVAL);
  }
  const unsigned vectors = pool_vectors(dev);
  // The kernel would grow the pool forever for a request a fresh CQ cannot hold.
  if (nr_cqe == 0 || nr_cqe > pool_cq_size(dev, nr_cqe)) return ErrPtr<ib_cq>::error(-EINVAL);

  std::unique_lock<std::mutex> guard(dev->cq_pools_lock);
  int vector = -1;
  if (dev->pool_policy == cq_pool_policy::kernel_first_fit) {
    if (comp_vector_hint < 0) {
      comp_vector_hint = int((unsigned(dev->default_comp_vector) + 1) % vectors);
      dev->default_comp_vector = comp_vector_hint;
    }
    vector = int(unsigned(comp_vector_hint) % vectors);
  } else if (comp_vector_hint >= 0) {
    vector = int(unsigned(comp_vector_hint) % vectors);
  }

  for (int attempt = 0; attempt < 2; attempt++) {
    ib_cq* found = dev->pool_policy == cq_pool_policy::kernel_first_fit
                       ? find_kernel_first_fit(dev, nr_cqe, unsigned(vector), poll_ctx)
                       : find_least_used(dev, nr_cqe, vector, poll_ctx);
    if (found) {
      found->cqe_used += nr_cqe;
      return found;
    }
    if (attempt == 0) {
      guard.unlock();
      if (int err = grow_pool(dev, nr_cqe, poll_ctx)) return ErrPtr<ib_cq>::error(err);
      guard.lock();
    }
  }
  // A fresh batch always fits a request that passed the size check; a driver reporting
  // less capacity than asked for lands here.
  return ErrPtr<ib_cq>::error(-ENOSPC);
}

int ib_cq_pool_put(ib_cq* cq, unsigned nr_cqe) {
  std::lock_guard<std::mutex> guard(cq->device->cq_pools_lock);
  if (nr_cqe > cq->cqe_used) {
    cq->device->warnings.warn("ib_cq_pool_put: returning more than was taken");
    return -EINVAL;
  }
  cq->cqe_used -= nr_cqe;
  return 0;
}

int ib_cq_pool_cleanup(ib_device* dev) {
  int kept = 0;
  std::list<ib_cq*> unused;
  {
    std::lock_guard<std::mutex> guard(dev->cq_pools_lock);
    for (auto& pool : dev->cq_pools) {
      for (auto it = pool.begin(); it != pool.end();) {
        auto next = std::next(it);
        if ((*it)->cqe_used != 0) {
          dev->warnings.warn("ib_cq_pool_cleanup: pool CQ still in use");
          kept++;
        } else {
          unused.splice(unused.end(), pool, it);
        }
        it = next;
      }
    }
  }
  for (ib_cq* cq : unused) {
    cq->shared = false;
    ib_free_cq(cq);
  }
  return kept;
}

}  // namespace ibcore
