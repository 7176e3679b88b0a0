#include "model/device/hmc.h"

#include <algorithm>

#include "model/device/descriptor_fields.h"

namespace irdma_sim::device {

using namespace regs;

namespace {

// Where an object's qword is. The query starts after the SD qword and has none for APBVT
// (5); both skip the CEQ-count qword at 120 before RRF (15).
constexpr uint32_t query_offset(unsigned o) { return 8 + 8 * o - (o >= 5 ? 8 : 0) + (o >= 15 ? 8 : 0); }
constexpr uint32_t commit_offset(unsigned o) { return 8 * o + (o >= 15 ? 8 : 0); }
static_assert(query_offset(Hmc::PBLE) == 112 && commit_offset(Hmc::PBLE) == 112);
static_assert(query_offset(Hmc::MR) == 48 && commit_offset(20) == 168);

}  // namespace

uint32_t Hmc::max_count(Object o) const {
  switch (o) {
    case QP: return cfg_.max_qp;
    case CQ: return cfg_.max_cq;
    case MR: return cfg_.max_stags;
    case PBLE: return kMaxPbles;
    default: return 0;
  }
}

unsigned Hmc::log2_size(Object o) {
  switch (o) {
    case QP: return 9;   // 512-byte QP contexts
    case CQ: return 5;   // 32-byte CQ contexts
    case MR: return 6;   // 64-byte STag entries
    case PBLE: return 3;  // 8-byte page addresses
    default: return 0;
  }
}

uint16_t Hmc::query_fpm(uint64_t buf) {
  std::array<uint64_t, kFpmBufBytes / 8> q{};
  q[0] = uint64_t(kMaxSds) << 32;  // first PE SD index 0
  for (Object o : {QP, CQ, MR, PBLE})
    q[query_offset(o) / 8] = uint64_t(log2_size(o)) << 32 | max_count(o);
  // Free-list objects the driver requires a block size of, though this device has none.
  q[query_offset(XFFL) / 8] = 1ull << 32;
  q[query_offset(Q1FL) / 8] = 1ull << 32;
  q[FPM_MAX_CEQS_OFFSET / 8] = cfg_.num_ceqs & FPM_MAX_CEQS_MASK;
  return dma_.write(buf, q.data(), kFpmBufBytes) ? 0 : CQP_MINOR_DMA_ERROR;
}

// Lays the committed objects out in index order, 512-byte aligned, and answers each with
// its count and base (in 512-byte units) in the same buffer.
uint16_t Hmc::commit_fpm(uint64_t buf, uint32_t len) {
  std::array<uint64_t, kFpmBufBytes / 8> c{};
  if (len < kFpmBufBytes) return CQP_MINOR_BAD_SIZE;
  if (!dma_.read(buf, c.data(), kFpmBufBytes)) return CQP_MINOR_DMA_ERROR;
  std::array<uint32_t, kObjects> count{};
  std::array<uint64_t, kObjects> base{};
  uint64_t end = 0;
  for (unsigned o = 0; o < kObjects; o++) {
    const uint64_t want = c[commit_offset(o) / 8] & 0xFFFFFFFF;
    if (want > max_count(Object(o))) return CQP_MINOR_BAD_SIZE;
    count[o] = uint32_t(want);
    base[o] = end;
    end = (end + (want << log2_size(Object(o))) + 511) & ~511ull;
  }
  if (end > kMaxSds * kSdBytes) return CQP_MINOR_BAD_SIZE;
  for (unsigned o = 0; o < kObjects; o++) c[commit_offset(o) / 8] = (base[o] / 512) << 32 | count[o];
  if (!dma_.write(buf, c.data(), kFpmBufBytes)) return CQP_MINOR_DMA_ERROR;
  count_ = count;
  base_ = base;
  return 0;
}

// Up to three SD entries in the WQE itself: (qword0, qword1) always, (4, 5) and (6, 7)
// when their command's bit 63 says so. Entries past those come in a buffer this device
// does not fetch: such a command is refused.
uint16_t Hmc::update_sds(const uint64_t* wqe) {
  if (get(wqe[3], CQP_UPESD_ENTRY_COUNT)) return CQP_MINOR_UNSUPPORTED;
  const std::pair<uint64_t, uint64_t> entries[] = {{wqe[0] | SD_CMD_VALID, wqe[1]}, {wqe[4], wqe[5]}, {wqe[6], wqe[7]}};
  for (const auto& [cmd, data] : entries) {
    if (!(cmd & SD_CMD_VALID)) continue;
    const uint64_t index = get(cmd, SD_CMD_INDEX);
    if (index >= kMaxSds || !(cmd & SD_CMD_WRITE)) return CQP_MINOR_BAD_ID;
    if ((data & SD_VALID) && (data & SD_TYPE_DIRECT)) return CQP_MINOR_UNSUPPORTED;  // paged SDs only
    sd_[index] = data;
  }
  return 0;
}

uint64_t Hmc::host_addr(uint64_t fpm) {
  const uint64_t sd_index = fpm / kSdBytes;
  if (sd_index >= kMaxSds) return 0;
  const uint64_t sd = sd_[sd_index];
  if (!(sd & SD_VALID)) return 0;
  const uint64_t base = sd & ~(kPageBytes - 1);
  // The SD's page holds 512 page addresses, each valid in bit 0.
  uint64_t pd = 0;
  if (!dma_.read(base + (fpm % kSdBytes) / kPageBytes * 8, &pd, 8) || !(pd & 1)) return 0;
  return (pd & ~(kPageBytes - 1)) + fpm % kPageBytes;
}

bool Hmc::read_pbles(uint64_t first, uint64_t n, uint64_t* out) {
  if (first + n > count_[PBLE]) return false;
  uint64_t fpm = base_[PBLE] + first * 8;
  while (n) {
    // One read per page: the next page may live anywhere.
    const uint64_t here = std::min(n, (kPageBytes - fpm % kPageBytes) / 8);
    const uint64_t addr = host_addr(fpm);
    if (!addr || !dma_.read(addr, out, uint32_t(here * 8))) return false;
    out += here;
    n -= here;
    fpm += here * 8;
  }
  return true;
}

// The feature list: FW_INFO (with the count), FTN_FLAGS and the largest CQ; a buffer too
// small gets what fits, and the count tells the driver to ask again with more room.
uint16_t Hmc::query_features(uint64_t buf, uint32_t len) {
  const uint64_t flags = (cfg_.generation >= 3 ? FTN_FLAG_ATOMICS : 0) | (cfg_.cq_resize ? FTN_FLAG_CQ_RESIZE : 0) |
                         (cfg_.cqe_64byte ? FTN_FLAG_64BYTE_CQE : 0);
  constexpr uint64_t kCount = 3;
  const uint64_t features[kCount] = {
      uint64_t(FEATURE_FW_INFO) << 48 | kCount << 32 | kFirmwareVersion,
      uint64_t(FEATURE_FTN_FLAGS) << 48 | flags,
      uint64_t(FEATURE_SIM_MAX_CQE) << 48 | cfg_.max_cqe,
  };
  const uint32_t words = uint32_t(std::min<uint64_t>(len / 8, kCount));
  if (!words) return CQP_MINOR_BAD_SIZE;
  return dma_.write(buf, features, words * 8) ? 0 : CQP_MINOR_DMA_ERROR;
}

}  // namespace irdma_sim::device
