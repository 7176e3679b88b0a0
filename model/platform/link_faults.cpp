#include "model/platform/link_faults.h"

namespace irdma_sim::platform {

// Uniform in [0, 1) from the top 53 bits: the same on every standard library, unlike
// std::uniform_real_distribution.
bool LinkFaults::draw(double rate) { return rate > 0 && double(rng_() >> 11) * 0x1.0p-53 < rate; }

uint64_t LinkFaults::up_to_ps(double max_ns) {
  const auto max_ps = uint64_t(max_ns * 1000);
  return 1 + (max_ps ? rng_() % max_ps : 0);
}

uint64_t LinkFaults::posted_delay_ps() {
  if (!draw(cfg_.posted_delay_rate)) return 0;
  counters_.writes_delayed++;
  return up_to_ps(cfg_.posted_delay_max_ns);
}

uint64_t LinkFaults::split_gap_ps(uint32_t len) {
  if (len <= 8 || !draw(cfg_.split_rate)) return 0;
  counters_.writes_split++;
  return uint64_t(cfg_.split_gap_ns * 1000) + 1;  // a gap of 0 still splits: pieces a picosecond apart
}

LinkFaults::Msix LinkFaults::msix_fate() {
  if (draw(cfg_.msix_lost_rate)) {
    counters_.msix_lost++;
    return Msix::lose;
  }
  if (draw(cfg_.msix_duplicated_rate)) {
    counters_.msix_duplicated++;
    return Msix::duplicate;
  }
  return Msix::deliver;
}

uint64_t LinkFaults::msix_mask_ps() {
  if (!draw(cfg_.msix_mask_rate)) return 0;
  counters_.msix_masked++;
  return up_to_ps(cfg_.msix_mask_max_ns);
}

uint64_t LinkFaults::msix_delay_ps() {
  if (!draw(cfg_.msix_delayed_rate)) return 0;
  counters_.msix_delayed++;
  return up_to_ps(cfg_.msix_delay_max_ns);
}

bool LinkFaults::strikes(double rate, uint64_t& count) {
  if (!draw(rate)) return false;
  count++;
  return true;
}

bool LinkFaults::read_fails(const device::DmaPurpose& purpose) {
  switch (purpose.kind) {
    case device::DmaPurpose::wqe_fetch: return strikes(cfg_.wqe_read_error_rate, counters_.wqe_reads_failed);
    case device::DmaPurpose::cq_arm: return strikes(cfg_.shadow_read_error_rate, counters_.shadow_reads_failed);
    default: return false;
  }
}

LinkFaults::Write LinkFaults::write_fate(const device::DmaPurpose& purpose) {
  const auto refused = [&](double rate, uint64_t& count) { return strikes(rate, count) ? Write::refused : Write::lands; };
  switch (purpose.kind) {
    case device::DmaPurpose::cqe_write: return refused(cfg_.cqe_write_error_rate, counters_.cqe_writes_failed);
    case device::DmaPurpose::ceqe_write: return refused(cfg_.ceqe_write_error_rate, counters_.ceqe_writes_failed);
    case device::DmaPurpose::aeqe_write: return refused(cfg_.aeqe_write_error_rate, counters_.aeqe_writes_failed);
    case device::DmaPurpose::payload_write:
      return strikes(cfg_.payload_write_poison_rate, counters_.payload_writes_poisoned) ? Write::poisoned : Write::lands;
    default: return Write::lands;
  }
}

}  // namespace irdma_sim::platform
