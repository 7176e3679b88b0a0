#include "model/device/stag_table.h"

#include <algorithm>

#include "model/device/regs.h"

namespace irdma_sim::device {

using namespace regs;

namespace {

uint32_t index_of(uint32_t stag) { return stag >> 8; }
uint8_t key_of(uint32_t stag) { return uint8_t(stag & 0xFF); }

bool within(uint64_t va, uint64_t len, uint64_t base, uint64_t span) {
  return va >= base && len <= span && va - base <= span - len;
}

}  // namespace

uint16_t StagTable::alloc(uint32_t index, bool window, bool type1, uint64_t max_len, uint32_t pd) {
  if (index == 0 || index >= max_index_) return CQP_MINOR_BAD_ID;
  if (entries_.count(index)) return CQP_MINOR_ID_IN_USE;
  Entry& e = entries_[index];
  e.window = window;
  e.type1 = type1;
  e.max_len = max_len;
  e.pd = pd;
  return 0;
}

uint16_t StagTable::dealloc(uint32_t index, bool window) {
  auto it = entries_.find(index);
  if (it == entries_.end() || it->second.window != window) return CQP_MINOR_NO_SUCH_OBJECT;
  entries_.erase(it);
  return 0;
}

// A region must be allocated and not registered (the kernel invalidates before it
// registers again); re-registering a valid one is an error the AE table has no code for.
uint16_t StagTable::fast_register(const StagGrant& g, std::vector<uint64_t> pages, bool contiguous) {
  auto it = entries_.find(index_of(g.stag));
  if (it == entries_.end() || it->second.window) return FLUSH_PROT_ERR;  // AMP_UNALLOCATED_STAG
  Entry& e = it->second;
  if (e.valid) return FLUSH_GENERAL_ERR;
  if (g.len > e.max_len || pages.size() < (contiguous ? 1 : pages_spanned(g.va, g.len))) return FLUSH_PROT_ERR;
  e.valid = true;
  e.key = key_of(g.stag);
  e.rights = g.rights;
  e.atomics = g.atomics;
  e.va = g.va;
  e.len = g.len;
  e.pages = std::move(pages);
  e.contiguous = contiguous;
  e.generation = ++registrations_;
  return 0;
}

// Window failures carry the codes of the AMP_MWBIND_* events; a parent that is no valid
// region is an invalid STag, a protection error (which the kernel reports for a bind as
// IB_WC_MW_BIND_ERR).
uint16_t StagTable::bind(const StagGrant& g, uint32_t region_stag, bool type1) {
  auto mw = entries_.find(index_of(g.stag));
  if (mw == entries_.end() || !mw->second.window || mw->second.type1 != type1) return FLUSH_PROT_ERR;
  if (!type1 && mw->second.valid) return FLUSH_MW_BIND_ERR;  // AMP_MWBIND_VALID_STAG
  auto mr = entries_.find(index_of(region_stag));
  if (mr == entries_.end() || mr->second.window || !mr->second.valid ||
      mr->second.key != key_of(region_stag))
    return FLUSH_PROT_ERR;
  const Entry& region = mr->second;
  if (!(region.rights & RIGHT_BIND_WINDOW)) return FLUSH_MW_BIND_ERR;  // INVALID_RIGHTS
  if (!within(g.va, g.len, region.va, region.len)) return FLUSH_MW_BIND_ERR;  // INVALID_BOUNDS
  Entry& w = mw->second;
  w.valid = true;
  w.key = key_of(g.stag);
  w.rights = g.rights;
  w.atomics = g.atomics;
  w.va = g.va;
  w.len = g.len;
  w.parent = mr->first;
  w.parent_generation = region.generation;
  return 0;
}

uint16_t StagTable::invalidate(uint32_t stag) {
  auto it = entries_.find(index_of(stag));
  if (stag == 0 || it == entries_.end()) return 0;
  Entry& e = it->second;
  if (e.key != key_of(stag) || (e.window && e.type1)) return FLUSH_PROT_ERR;
  e.valid = false;
  return 0;
}

const StagTable::Entry* StagTable::usable(uint32_t stag, RemoteAccess access) const {
  auto it = entries_.find(index_of(stag));
  if (it == entries_.end() || !it->second.valid || it->second.key != key_of(stag)) return nullptr;
  const Entry& e = it->second;
  const bool allowed = access == RemoteAccess::read    ? e.rights & RIGHT_REMOTE_READ
                       : access == RemoteAccess::write ? e.rights & RIGHT_REMOTE_WRITE
                                                       : e.atomics;
  return allowed ? &e : nullptr;
}

uint16_t StagTable::translate(uint32_t stag, uint64_t va, uint64_t len, RemoteAccess access, uint32_t pd,
                              std::vector<Extent>& out) const {
  if (stag == 0) {
    out.push_back({va, len});
    return 0;
  }
  const Entry* e = usable(stag, access);
  if (!e || e->pd != pd || !within(va, len, e->va, e->len)) return FLUSH_REM_ACCESS_ERR;
  const Entry* region = e;
  if (e->window) {
    auto it = entries_.find(e->parent);
    if (it == entries_.end() || !it->second.valid || it->second.generation != e->parent_generation)
      return FLUSH_REM_ACCESS_ERR;
    region = &it->second;
  }
  append_pages(*region, va, len, out);
  return 0;
}

uint16_t StagTable::translate_local(uint32_t stag, uint64_t va, uint64_t len, bool write, uint32_t pd,
                                    std::vector<Extent>& out) const {
  auto it = entries_.find(index_of(stag));
  if (it == entries_.end() || it->second.window) return AE_AMP_UNALLOCATED_STAG;
  const Entry& e = it->second;
  if (!e.valid) return AE_AMP_INVALID_STAG;
  if (e.key != key_of(stag)) return AE_AMP_BAD_STAG_KEY;
  if (e.pd != pd) return AE_AMP_BAD_PD;
  if (!within(va, len, e.va, e.len)) return AE_AMP_BOUNDS_VIOLATION;
  if (write && !(e.rights & RIGHT_LOCAL_WRITE)) return AE_AMP_RIGHTS_VIOLATION;
  append_pages(e, va, len, out);
  return 0;
}

void StagTable::append_pages(const Entry& region, uint64_t va, uint64_t len, std::vector<Extent>& out) {
  // Byte `off` of the region lies in page (off + first page offset) / kPage.
  uint64_t at = va - region.va + region.va % kPage;
  if (region.contiguous) {
    const uint64_t addr = region.pages[0] + at;
    if (!out.empty() && out.back().addr + out.back().len == addr)
      out.back().len += len;
    else
      out.push_back({addr, len});
    return;
  }
  for (uint64_t left = len; left;) {
    const uint64_t page = region.pages[at / kPage];
    const uint64_t n = std::min(left, kPage - at % kPage);
    const uint64_t addr = page + at % kPage;
    if (!out.empty() && out.back().addr + out.back().len == addr)
      out.back().len += n;
    else
      out.push_back({addr, n});
    at += n;
    left -= n;
  }
}

}  // namespace irdma_sim::device
