// The shared CQ pool (spec A.6-A.10, H 1-9) under both policies, on a device double that
// reports exactly the capacity asked for, as irdma does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <random>
#include <vector>

#include "driver/core/cq.h"
#include "driver/core/cq_pool.h"

namespace {

using namespace ibcore;

struct FakeDevice : ib_device {
  int creates = 0;
  int destroys = 0;
  int fail_after = -1;  // creates allowed before create_cq fails with -ENOMEM
  std::vector<std::string> warned;
  std::map<const ib_cq*, int> serial;  // creation order

  FakeDevice(unsigned vectors, unsigned cpus, int max_cqe, cq_pool_policy policy) {
    num_comp_vectors = vectors;
    num_online_cpus = cpus;
    attrs.max_cqe = max_cqe;
    pool_policy = policy;
    warnings.sink = [this](const std::string& w) { warned.push_back(w); };
  }
  ~FakeDevice() override {
    for (auto& pool : cq_pools)
      for (ib_cq* cq : pool) delete cq;
  }
  ib_cq* create_cq(const ib_cq_init_attr& attr, int& err) override {
    if (fail_after == 0) {
      err = -ENOMEM;
      return nullptr;
    }
    if (fail_after > 0) fail_after--;
    auto* cq = new ib_cq;
    cq->cqe = int(attr.cqe);
    serial[cq] = creates++;
    return cq;
  }
  int destroy_cq(ib_cq* cq) override {
    destroys++;
    serial.erase(cq);
    delete cq;
    return 0;
  }
  int poll_cq(ib_cq*, int, ib_wc*) override { return 0; }
  int req_notify_cq(ib_cq*, unsigned) override { return 0; }
  size_t pool_size(ib_poll_context ctx = IB_POLL_SOFTIRQ) const { return cq_pools[ctx].size(); }
};

constexpr auto kKernel = cq_pool_policy::kernel_first_fit;
constexpr auto kDocumented = cq_pool_policy::least_used;

class BothPolicies : public ::testing::TestWithParam<cq_pool_policy> {};
INSTANTIATE_TEST_SUITE_P(Pool, BothPolicies, ::testing::Values(kKernel, kDocumented),
                         [](const auto& info) {
                           return info.param == kKernel ? std::string("KernelFirstFit")
                                                        : std::string("LeastUsed");
                         });

TEST_P(BothPolicies, DirectAndUnknownPollContextsAreRejected) {
  FakeDevice dev(2, 2, 100000, GetParam());
  for (int ctx : {int(IB_POLL_DIRECT), 4, -1}) {
    auto r = ib_cq_pool_get(&dev, 16, 0, ib_poll_context(ctx));
    ASSERT_TRUE(r.is_err());
    EXPECT_EQ(r.err(), -EINVAL);
  }
  EXPECT_EQ(dev.creates, 0);
  EXPECT_EQ(dev.warned.size(), 3u);
}

TEST_P(BothPolicies, GrowthAddsOneCqPerVectorOfAtLeast4096Entries) {
  FakeDevice dev(4, 2, 1048574, GetParam());  // vectors limited by online CPUs
  auto r = ib_cq_pool_get(&dev, 100, 1, IB_POLL_SOFTIRQ);
  ASSERT_FALSE(r.is_err());
  EXPECT_EQ(dev.creates, 2);
  EXPECT_EQ(r->cqe, 4096);
  EXPECT_EQ(r->comp_vector, 1u);
  EXPECT_TRUE(r->shared);
  EXPECT_EQ(r->cqe_used, 100u);
  auto big = ib_cq_pool_get(&dev, 5000, 0, IB_POLL_SOFTIRQ);
  ASSERT_FALSE(big.is_err());
  EXPECT_EQ(big->cqe, 5000) << "max(nr, 4096)";
  EXPECT_EQ(dev.creates, 4);
}

TEST_P(BothPolicies, CapacityIsCappedByTheDeviceAndFilledExactly) {
  FakeDevice dev(1, 1, 300, GetParam());
  auto a = ib_cq_pool_get(&dev, 200, 0, IB_POLL_SOFTIRQ);
  ASSERT_FALSE(a.is_err());
  EXPECT_EQ(a->cqe, 300);
  auto b = ib_cq_pool_get(&dev, 100, 0, IB_POLL_SOFTIRQ);
  ASSERT_FALSE(b.is_err());
  EXPECT_EQ(b.get(), a.get()) << "used + nr == cqe still fits";
  EXPECT_EQ(a->cqe_used, 300u);
  auto c = ib_cq_pool_get(&dev, 1, 0, IB_POLL_SOFTIRQ);
  ASSERT_FALSE(c.is_err());
  EXPECT_NE(c.get(), a.get()) << "one more grows the pool";
  EXPECT_EQ(dev.creates, 2);
}

TEST_P(BothPolicies, RequestNoCqCanHoldIsAnErrorNotEndlessGrowth) {
  FakeDevice dev(2, 2, 300, GetParam());
  auto r = ib_cq_pool_get(&dev, 301, -1, IB_POLL_SOFTIRQ);
  ASSERT_TRUE(r.is_err());
  EXPECT_EQ(r.err(), -EINVAL);
  EXPECT_EQ(dev.creates, 0);
  EXPECT_TRUE(ib_cq_pool_get(&dev, 0, 0, IB_POLL_SOFTIRQ).is_err());
}

TEST_P(BothPolicies, PutMoreThanTakenIsRejectedAndChangesNothing) {
  FakeDevice dev(1, 1, 100000, GetParam());
  auto r = ib_cq_pool_get(&dev, 10, 0, IB_POLL_WORKQUEUE);
  ASSERT_FALSE(r.is_err());
  EXPECT_EQ(ib_cq_pool_put(r.get(), 11), -EINVAL);
  EXPECT_EQ(r->cqe_used, 10u);
  EXPECT_EQ(dev.warned.size(), 1u);
  EXPECT_EQ(ib_cq_pool_put(r.get(), 10), 0);
  EXPECT_EQ(r->cqe_used, 0u);
  EXPECT_EQ(dev.pool_size(IB_POLL_WORKQUEUE), 1u) << "a CQ put to zero stays pooled";
  auto again = ib_cq_pool_get(&dev, 10, 0, IB_POLL_WORKQUEUE);
  EXPECT_EQ(again.get(), r.get());
}

TEST_P(BothPolicies, PoolsArePerPollContext) {
  FakeDevice dev(1, 1, 100000, GetParam());
  auto soft = ib_cq_pool_get(&dev, 10, 0, IB_POLL_SOFTIRQ);
  auto wq = ib_cq_pool_get(&dev, 10, 0, IB_POLL_UNBOUND_WORKQUEUE);
  ASSERT_FALSE(soft.is_err());
  ASSERT_FALSE(wq.is_err());
  EXPECT_NE(soft.get(), wq.get());
  EXPECT_EQ(wq->poll_ctx, IB_POLL_UNBOUND_WORKQUEUE);
}

TEST_P(BothPolicies, GrowthFailureFreesThePartialBatch) {
  FakeDevice dev(3, 3, 100000, GetParam());
  dev.fail_after = 2;
  auto r = ib_cq_pool_get(&dev, 10, 0, IB_POLL_SOFTIRQ);
  ASSERT_TRUE(r.is_err());
  EXPECT_EQ(r.err(), -ENOMEM);
  EXPECT_EQ(dev.destroys, 2);
  EXPECT_EQ(dev.pool_size(), 0u);
}

TEST_P(BothPolicies, CleanupKeepsAndReportsCqsStillInUse) {
  FakeDevice dev(2, 2, 100000, GetParam());
  auto r = ib_cq_pool_get(&dev, 10, 0, IB_POLL_SOFTIRQ);
  ASSERT_FALSE(r.is_err());
  EXPECT_EQ(ib_cq_pool_cleanup(&dev), 1);
  EXPECT_EQ(dev.destroys, 1);
  EXPECT_EQ(dev.pool_size(), 1u);
  ib_cq_pool_put(r.get(), 10);
  EXPECT_EQ(ib_cq_pool_cleanup(&dev), 0);
  EXPECT_EQ(dev.pool_size(), 0u);
}

TEST(CqAlloc, FreeRefusesCqsInUse) {
  FakeDevice dev(1, 1, 100000, kDocumented);
  auto cq = ib_alloc_cq(&dev, nullptr, 10, 0, IB_POLL_DIRECT);
  ASSERT_FALSE(cq.is_err());
  cq->usecnt = 1;
  EXPECT_EQ(ib_free_cq(cq.get()), -EBUSY);
  cq->usecnt = 0;
  cq->cqe_used = 1;
  EXPECT_EQ(ib_free_cq(cq.get()), -EBUSY);
  cq->cqe_used = 0;
  EXPECT_EQ(ib_free_cq(cq.get()), 0);
  EXPECT_EQ(dev.destroys, 1);
  EXPECT_EQ(dev.warned.size(), 2u);
}

TEST(KernelPolicy, AutomaticVectorsRoundRobinFromOneAndHintsWrap) {
  FakeDevice dev(4, 4, 100000, kKernel);
  std::vector<unsigned> picked;
  for (int i = 0; i < 5; i++) picked.push_back(ib_cq_pool_get(&dev, 1, -1, IB_POLL_SOFTIRQ)->comp_vector);
  EXPECT_EQ(picked, (std::vector<unsigned>{1, 2, 3, 0, 1}));
  EXPECT_EQ(ib_cq_pool_get(&dev, 1, 6, IB_POLL_SOFTIRQ)->comp_vector, 2u) << "6 % 4";
  EXPECT_EQ(ib_cq_pool_get(&dev, 1, -1, IB_POLL_SOFTIRQ)->comp_vector, 2u)
      << "explicit hints leave the round-robin counter alone";
}

TEST(KernelPolicy, FirstFitScansTheNewestBatchFirstNotTheLeastUsed) {
  FakeDevice dev(1, 1, 4096, kKernel);
  auto a = ib_cq_pool_get(&dev, 4000, 0, IB_POLL_SOFTIRQ);  // batch 1
  auto b = ib_cq_pool_get(&dev, 200, 0, IB_POLL_SOFTIRQ);   // does not fit a: batch 2
  ASSERT_NE(a.get(), b.get());
  ib_cq_pool_put(a.get(), 4000);  // a is now empty, b holds 200
  auto c = ib_cq_pool_get(&dev, 10, 0, IB_POLL_SOFTIRQ);
  EXPECT_EQ(c.get(), b.get()) << "newest batch first, though a is less used";
}

TEST(DocumentedPolicy, LeastUsedMatchingCqWins) {
  FakeDevice dev(1, 1, 4096, kDocumented);
  auto a = ib_cq_pool_get(&dev, 4000, 0, IB_POLL_SOFTIRQ);
  auto b = ib_cq_pool_get(&dev, 200, 0, IB_POLL_SOFTIRQ);
  ASSERT_NE(a.get(), b.get());
  ib_cq_pool_put(a.get(), 4000);
  auto c = ib_cq_pool_get(&dev, 10, 0, IB_POLL_SOFTIRQ);
  EXPECT_EQ(c.get(), a.get()) << "a is empty, b holds 200";
}

TEST(DocumentedPolicy, AnyVectorTakesTheLeastUsedOfAll) {
  FakeDevice dev(3, 3, 100000, kDocumented);
  auto first = ib_cq_pool_get(&dev, 50, 1, IB_POLL_SOFTIRQ);
  EXPECT_EQ(first->comp_vector, 1u);
  auto second = ib_cq_pool_get(&dev, 40, -1, IB_POLL_SOFTIRQ);
  EXPECT_EQ(second->comp_vector, 0u) << "vectors 0 and 2 are empty; list order breaks the tie";
  auto third = ib_cq_pool_get(&dev, 30, -1, IB_POLL_SOFTIRQ);
  EXPECT_EQ(third->comp_vector, 2u);
  EXPECT_EQ(dev.creates, 3);
}

// A reference model written apart from the pool: CQs as (batch, vector, capacity, used),
// the choice made by sorting, not by walking lists.
struct RefCq {
  int batch, vector, cqe, used, id;
};

class Reference {
 public:
  Reference(int vectors, int max_cqe, cq_pool_policy p) : n_(vectors), max_cqe_(max_cqe), policy_(p) {}
  // Returns the id of the chosen CQ, or -1 for an error.
  int get(int nr, int hint) {
    const int size = std::min(max_cqe_, std::max(nr, 4096));
    if (nr <= 0 || nr > size) return -1;
    int vector = -1;
    if (policy_ == kKernel) {
      if (hint < 0) hint = rr_ = (rr_ + 1) % n_;
      vector = hint % n_;
    } else if (hint >= 0) {
      vector = hint % n_;
    }
    for (int round = 0; round < 2; round++) {
      std::vector<RefCq*> fit;
      for (auto& c : cqs_)
        if ((vector < 0 || c.vector == vector) && c.used + nr <= c.cqe) fit.push_back(&c);
      std::stable_sort(fit.begin(), fit.end(), [](const RefCq* a, const RefCq* b) {
        return a->batch != b->batch ? a->batch > b->batch : a->vector < b->vector;
      });
      if (policy_ == kDocumented)
        std::stable_sort(fit.begin(), fit.end(), [](const RefCq* a, const RefCq* b) { return a->used < b->used; });
      if (!fit.empty()) {
        fit[0]->used += nr;
        return fit[0]->id;
      }
      for (int v = 0; v < n_; v++) cqs_.push_back({batches_, v, size, 0, int(cqs_.size())});
      batches_++;
    }
    return -1;
  }
  bool put(int id, int nr) {
    if (nr > cqs_[id].used) return false;
    cqs_[id].used -= nr;
    return true;
  }

 private:
  int n_, max_cqe_;
  cq_pool_policy policy_;
  int rr_ = 0, batches_ = 0;
  std::vector<RefCq> cqs_;
};

TEST_P(BothPolicies, MatchesAReferenceModelOverRandomSequences) {
  std::mt19937_64 rng(2024);
  for (int seq = 0; seq < 40; seq++) {
    const int vectors = 1 + int(rng() % 4);
    const int max_cqe = rng() % 2 ? 1048574 : 4096 + int(rng() % 3000);
    FakeDevice dev(unsigned(vectors), 8, max_cqe, GetParam());
    Reference ref(vectors, max_cqe, GetParam());
    std::vector<std::pair<ib_cq*, int>> held;  // (cq, nr)
    for (int step = 0; step < 250; step++) {
      if (held.empty() || rng() % 3) {
        const int nr = rng() % 10 == 0 ? int(rng() % 9000) : 1 + int(rng() % 1500);
        const int hint = int(rng() % (vectors + 3)) - 1;
        const int want = ref.get(nr, hint);
        auto got = ib_cq_pool_get(&dev, unsigned(nr), hint, IB_POLL_SOFTIRQ);
        ASSERT_EQ(got.is_err(), want < 0) << "seq " << seq << " step " << step;
        if (want < 0) continue;
        ASSERT_EQ(dev.serial.at(got.get()), want) << "seq " << seq << " step " << step;
        held.emplace_back(got.get(), nr);
      } else {
        const size_t i = rng() % held.size();
        const int extra = rng() % 8 == 0 ? 1 : 0;  // sometimes put back too much
        const bool ok = ref.put(dev.serial.at(held[i].first), held[i].second + extra);
        ASSERT_EQ(ib_cq_pool_put(held[i].first, unsigned(held[i].second + extra)) == 0, ok);
        if (ok) held.erase(held.begin() + long(i));
      }
    }
  }
}

}  // namespace
