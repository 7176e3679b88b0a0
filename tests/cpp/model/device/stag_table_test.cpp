// The device's memory keys: a region's life (allocated, registered, invalidated), windows
// bound over it, remote accesses checked and translated through its pages, and local
// fragments checked against their QP's PD, the bounds and LOCAL_WRITE.
#include <gtest/gtest.h>

#include <vector>

#include "model/device/regs.h"
#include "model/device/stag_table.h"

namespace {

using namespace irdma_sim::device;
using namespace irdma_sim::device::regs;

constexpr uint32_t kMr = 5, kMw = 6;
constexpr uint32_t kPd = 3;  // the keys' protection domain
constexpr uint8_t kAll = RIGHT_LOCAL_READ | RIGHT_LOCAL_WRITE | RIGHT_REMOTE_READ | RIGHT_REMOTE_WRITE |
                         RIGHT_BIND_WINDOW;
constexpr uint32_t stag(uint32_t index, uint8_t key) { return index << 8 | key; }

// A region of 3 pages at VA 0x7000'0F00 (8 KiB + 256 bytes), its pages scattered.
struct Keys : ::testing::Test {
  StagTable t{64};
  const std::vector<uint64_t> pages = {0x100000, 0x300000, 0x200000};
  void SetUp() override {
    ASSERT_EQ(t.alloc(kMr, false, false, 4 * StagTable::kPage, kPd), 0);
    ASSERT_EQ(t.alloc(kMw, true, true, 0, kPd), 0);
  }
  uint16_t reg(uint8_t key, uint8_t rights = kAll) {
    return t.fast_register({stag(kMr, key), 0x70000F00, 0x2100, rights, false}, pages);
  }
  uint16_t access(uint32_t s, uint64_t va, uint64_t len, RemoteAccess a, std::vector<Extent>* out = nullptr,
                  uint32_t pd = kPd) {
    std::vector<Extent> scratch;
    return t.translate(s, va, len, a, pd, out ? *out : scratch);
  }
  uint16_t local(uint32_t s, uint64_t va, uint64_t len, bool write, uint32_t pd = kPd) {
    std::vector<Extent> scratch;
    return t.translate_local(s, va, len, write, pd, scratch);
  }
};

TEST_F(Keys, ARegisteredRegionTranslatesThroughItsPages) {
  ASSERT_EQ(reg(0x21), 0);
  std::vector<Extent> out;
  // The last 0x100 bytes of the first page, then the whole second and third.
  ASSERT_EQ(access(stag(kMr, 0x21), 0x70000F00, 0x2100, RemoteAccess::write, &out), 0);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].addr, 0x100F00u);
  EXPECT_EQ(out[0].len, 0x100u);
  EXPECT_EQ(out[1].addr, 0x300000u);
  EXPECT_EQ(out[1].len, 0x1000u);
  EXPECT_EQ(out[2].addr, 0x200000u);
  EXPECT_EQ(out[2].len, 0x1000u);
}

TEST_F(Keys, ContiguousPagesMergeIntoOneExtent) {
  ASSERT_EQ(t.fast_register({stag(kMr, 1), 0x5000, 0x2000, kAll, false}, {0x9000, 0xA000}), 0);
  std::vector<Extent> out;
  ASSERT_EQ(access(stag(kMr, 1), 0x5800, 0x1000, RemoteAccess::read, &out), 0);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].addr, 0x9800u);
  EXPECT_EQ(out[0].len, 0x1000u);
}

// REG_MR's physically contiguous run keeps its first page only: a region of 2^45 bytes costs
// no list, and translates as the list would.
TEST(KeysRun, AContiguousRunOfAnyLengthTranslatesFromItsFirstPage) {
  StagTable t{64};
  constexpr uint64_t kHuge = 1ull << 45;
  ASSERT_EQ(t.alloc(kMr, false, false, kHuge, kPd), 0);
  ASSERT_EQ(t.fast_register({stag(kMr, 2), 0x7000'0F00, kHuge, kAll, false}, {0x4'0000'0000}, true), 0);
  std::vector<Extent> out;
  ASSERT_EQ(t.translate(stag(kMr, 2), 0x7000'0F00 + (1ull << 40), 0x3000, RemoteAccess::write, kPd, out), 0);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].addr, 0x4'0000'0F00u + (1ull << 40));
  EXPECT_EQ(out[0].len, 0x3000u);
  EXPECT_EQ(t.translate(stag(kMr, 2), 0x7000'0F00 + kHuge - 8, 16, RemoteAccess::write, kPd, out),
            FLUSH_REM_ACCESS_ERR) << "past its end";
}

TEST_F(Keys, AccessNeedsTheKeyTheRightsAndTheBounds) {
  ASSERT_EQ(reg(0x21, RIGHT_LOCAL_READ | RIGHT_REMOTE_READ), 0);
  EXPECT_EQ(access(stag(kMr, 0x21), 0x70001000, 64, RemoteAccess::read), 0);
  EXPECT_EQ(access(stag(kMr, 0x22), 0x70001000, 64, RemoteAccess::read), FLUSH_REM_ACCESS_ERR) << "key";
  EXPECT_EQ(access(stag(kMr, 0x21), 0x70001000, 64, RemoteAccess::write), FLUSH_REM_ACCESS_ERR) << "rights";
  EXPECT_EQ(access(stag(kMr, 0x21), 0x70001000, 64, RemoteAccess::atomic), FLUSH_REM_ACCESS_ERR) << "no atomics";
  EXPECT_EQ(access(stag(kMr, 0x21), 0x70000EFF, 2, RemoteAccess::read), FLUSH_REM_ACCESS_ERR) << "below";
  EXPECT_EQ(access(stag(kMr, 0x21), 0x70002FFF, 2, RemoteAccess::read), FLUSH_REM_ACCESS_ERR) << "past the end";
  EXPECT_EQ(access(stag(kMr, 0x21), 0x70002FFF, 1, RemoteAccess::read), 0) << "the last byte";
  EXPECT_EQ(access(stag(9, 0), 0x70001000, 1, RemoteAccess::read), FLUSH_REM_ACCESS_ERR) << "no such STag";
}

TEST_F(Keys, ARegionRegistersOnlyWhenInvalid) {
  ASSERT_EQ(reg(1), 0);
  EXPECT_EQ(reg(2), FLUSH_GENERAL_ERR) << "still registered";
  EXPECT_EQ(t.invalidate(stag(kMr, 2)), FLUSH_PROT_ERR) << "wrong key";
  EXPECT_EQ(t.invalidate(stag(kMr, 1)), 0);
  EXPECT_EQ(access(stag(kMr, 1), 0x70001000, 1, RemoteAccess::read), FLUSH_REM_ACCESS_ERR);
  EXPECT_EQ(reg(2), 0);
  EXPECT_EQ(access(stag(kMr, 2), 0x70001000, 1, RemoteAccess::read), 0);
}

TEST_F(Keys, RegistrationNeedsAnAllocatedRegionLargeEnoughWithItsPages) {
  EXPECT_EQ(t.fast_register({stag(7, 0), 0, 4096, kAll, false}, {0x1000}), FLUSH_PROT_ERR) << "unallocated";
  EXPECT_EQ(t.fast_register({stag(kMw, 0), 0, 4096, kAll, false}, {0x1000}), FLUSH_PROT_ERR) << "a window";
  EXPECT_EQ(t.fast_register({stag(kMr, 0), 0, 5 * 4096, kAll, false}, {1, 2, 3, 4, 5}), FLUSH_PROT_ERR)
      << "longer than allocated";
  EXPECT_EQ(t.fast_register({stag(kMr, 0), 0x800, 4096, kAll, false}, {0x1000}), FLUSH_PROT_ERR)
      << "spans two pages, one given";
}

TEST_F(Keys, AWindowGrantsASliceOfItsRegionWhileTheRegionLives) {
  ASSERT_EQ(reg(1), 0);
  const StagGrant w{stag(kMw, 9), 0x70001000, 0x800, RIGHT_REMOTE_WRITE, false};
  ASSERT_EQ(t.bind(w, stag(kMr, 1), true), 0);
  std::vector<Extent> out;
  ASSERT_EQ(access(stag(kMw, 9), 0x70001400, 0x100, RemoteAccess::write, &out), 0);
  EXPECT_EQ(out[0].addr, 0x300400u);
  EXPECT_EQ(access(stag(kMw, 9), 0x70001400, 0x100, RemoteAccess::read), FLUSH_REM_ACCESS_ERR) << "write only";
  EXPECT_EQ(access(stag(kMw, 9), 0x70001700, 0x200, RemoteAccess::write), FLUSH_REM_ACCESS_ERR) << "past it";
  EXPECT_EQ(t.bind({stag(kMw, 10), 0x70001000, 0x800, RIGHT_REMOTE_WRITE, false}, stag(kMr, 1), true), 0)
      << "a type-1 window binds again";
  EXPECT_EQ(t.invalidate(stag(kMw, 10)), FLUSH_PROT_ERR) << "type-1 windows are not invalidated";
  // The region goes: so does the window, and a new registration does not revive it.
  ASSERT_EQ(t.invalidate(stag(kMr, 1)), 0);
  EXPECT_EQ(access(stag(kMw, 10), 0x70001400, 1, RemoteAccess::write), FLUSH_REM_ACCESS_ERR);
  ASSERT_EQ(reg(2), 0);
  EXPECT_EQ(access(stag(kMw, 10), 0x70001400, 1, RemoteAccess::write), FLUSH_REM_ACCESS_ERR);
}

// A window over a region whose index was freed and allocated again is dead, however many
// times the new region was registered.
TEST_F(Keys, AWindowDoesNotOutliveItsRegionsIndex) {
  ASSERT_EQ(reg(1), 0);
  ASSERT_EQ(t.bind({stag(kMw, 2), 0x70001000, 0x100, RIGHT_REMOTE_READ, false}, stag(kMr, 1), true), 0);
  ASSERT_EQ(t.invalidate(stag(kMr, 1)), 0);
  ASSERT_EQ(t.dealloc(kMr, false), 0);
  ASSERT_EQ(t.alloc(kMr, false, false, 4 * StagTable::kPage, kPd), 0);
  ASSERT_EQ(reg(3), 0);
  EXPECT_EQ(access(stag(kMw, 2), 0x70001000, 8, RemoteAccess::read), FLUSH_REM_ACCESS_ERR);
}

TEST_F(Keys, BindFailuresCarryTheirCodes) {
  const StagGrant w{stag(kMw, 1), 0x70001000, 0x100, RIGHT_REMOTE_READ, false};
  EXPECT_EQ(t.bind(w, stag(kMr, 1), true), FLUSH_PROT_ERR) << "region not registered";
  ASSERT_EQ(reg(1, kAll & ~RIGHT_BIND_WINDOW), 0);
  EXPECT_EQ(t.bind(w, stag(kMr, 2), true), FLUSH_PROT_ERR) << "region's key";
  EXPECT_EQ(t.bind(w, stag(kMr, 1), true), FLUSH_MW_BIND_ERR) << "no bind right";
  ASSERT_EQ(t.invalidate(stag(kMr, 1)), 0);
  ASSERT_EQ(reg(3), 0);
  EXPECT_EQ(t.bind({stag(kMw, 1), 0x70000000, 0x100, 0, false}, stag(kMr, 3), true), FLUSH_MW_BIND_ERR)
      << "outside the region";
  EXPECT_EQ(t.bind(w, stag(kMr, 3), false), FLUSH_PROT_ERR) << "a type-1 window bound as type 2";
  ASSERT_EQ(t.alloc(7, true, false, 0, kPd), 0);
  const StagGrant w2{stag(7, 1), 0x70001000, 0x100, RIGHT_REMOTE_READ, false};
  ASSERT_EQ(t.bind(w2, stag(kMr, 3), false), 0);
  EXPECT_EQ(t.bind(w2, stag(kMr, 3), false), FLUSH_MW_BIND_ERR) << "a bound type-2 window";
  ASSERT_EQ(t.invalidate(stag(7, 1)), 0);
  EXPECT_EQ(t.bind(w2, stag(kMr, 3), false), 0);
}

TEST_F(Keys, StagZeroIsAllOfMemoryAndUnknownKeysAreIgnoredByInvalidation) {
  std::vector<Extent> out;
  ASSERT_EQ(access(0, 0x1234, 99, RemoteAccess::atomic, &out), 0);
  EXPECT_EQ(out[0].addr, 0x1234u);
  EXPECT_EQ(out[0].len, 99u);
  EXPECT_EQ(t.invalidate(0), 0);
  EXPECT_EQ(t.invalidate(stag(40, 3)), 0);
}

TEST_F(Keys, ControlCommandsCheckIdsAndKinds) {
  EXPECT_EQ(t.alloc(0, false, false, 4096, kPd), CQP_MINOR_BAD_ID);
  EXPECT_EQ(t.alloc(64, false, false, 4096, kPd), CQP_MINOR_BAD_ID);
  EXPECT_EQ(t.alloc(kMr, false, false, 4096, kPd), CQP_MINOR_ID_IN_USE);
  EXPECT_EQ(t.dealloc(kMr, true), CQP_MINOR_NO_SUCH_OBJECT) << "a region freed as a window";
  EXPECT_EQ(t.dealloc(kMr, false), 0);
  EXPECT_EQ(t.dealloc(kMr, false), CQP_MINOR_NO_SUCH_OBJECT);
}

TEST_F(Keys, AKeyServesOnlyQpsOfItsProtectionDomain) {
  ASSERT_EQ(reg(0x21), 0);
  EXPECT_EQ(access(stag(kMr, 0x21), 0x70000F00, 16, RemoteAccess::write), 0);
  EXPECT_EQ(access(stag(kMr, 0x21), 0x70000F00, 16, RemoteAccess::write, nullptr, kPd + 1), FLUSH_REM_ACCESS_ERR);
  EXPECT_EQ(access(0, 0x1234, 16, RemoteAccess::write, nullptr, kPd + 1), 0) << "the global key has no PD";
  EXPECT_EQ(local(stag(kMr, 0x21), 0x70000F00, 16, false), 0);
  EXPECT_EQ(local(stag(kMr, 0x21), 0x70000F00, 16, false, kPd + 1), AE_AMP_BAD_PD);
}

TEST_F(Keys, ALocalFragmentNeedsAValidRegionItsKeyBoundsAndLocalWriteToBeWritten) {
  EXPECT_EQ(local(stag(kMr, 0x21), 0x70000F00, 16, false), AE_AMP_INVALID_STAG) << "not registered yet";
  EXPECT_EQ(local(stag(9, 0), 0x70000F00, 16, false), AE_AMP_UNALLOCATED_STAG);
  EXPECT_EQ(local(stag(kMw, 0), 0, 16, false), AE_AMP_UNALLOCATED_STAG) << "a window is no lkey";
  ASSERT_EQ(reg(0x21, RIGHT_LOCAL_READ | RIGHT_REMOTE_READ), 0);
  EXPECT_EQ(local(stag(kMr, 0x22), 0x70000F00, 16, false), AE_AMP_BAD_STAG_KEY);
  EXPECT_EQ(local(stag(kMr, 0x21), 0x70000F00 - 1, 16, false), AE_AMP_BOUNDS_VIOLATION);
  EXPECT_EQ(local(stag(kMr, 0x21), 0x70000F00 + 0x2100 - 8, 16, false), AE_AMP_BOUNDS_VIOLATION);
  EXPECT_EQ(local(stag(kMr, 0x21), 0x70000F00, 16, true), AE_AMP_RIGHTS_VIOLATION);
  std::vector<Extent> out;
  ASSERT_EQ(t.translate_local(stag(kMr, 0x21), 0x70001000, 0x1000, false, kPd, out), 0);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].addr, 0x300000u);
}

}  // namespace
