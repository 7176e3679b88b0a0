// WQE fetch and decode: SQ WQEs read from host memory a max read request at a time, the
// peer's RQ WQEs one at a time, and the fragment lists both carry.
#include "model/device/qp_engine.h"

#include <algorithm>

#include "model/device/descriptor_fields.h"

namespace irdma_sim::device {

using namespace regs;

// The WQE at the SQ head, read with the quanta after it unless the window holds it, and
// decoded once its valid bit shows the head's pass.
QpEngine::Fetch QpEngine::fetch_sq_wqe(const QpContext& qp, SqWindow& window, SqWqe& wqe) {
  const uint32_t head = qp.sq_head.idx;
  if (!window.holds(head) && !load_window(qp, window, head)) return Fetch::unreadable;
  wqe.qwords = window.qwords + size_t(head - window.first) * (kQuantum / 8);
  if (bit(wqe.qwords[3], WQE_VALID) != qp.sq_head.polarity) return Fetch::empty;
  time_.cycles(cfg_.cycles.wqe_decode);
  wqe.op = uint8_t(get(wqe.qwords[3], SQ_WQE_OPCODE));
  wqe.quanta = wqe_quanta(wqe.qwords[3]);
  wqe.fits = wqe.quanta <= kMaxQuanta && head + wqe.quanta <= qp.sq_quanta;
  // A WQE whose tail was not fetched yet is fetched again from its start.
  if (wqe.fits && head + wqe.quanta > window.first + window.count) {
    if (!load_window(qp, window, head)) return Fetch::unreadable;
    wqe.qwords = window.qwords;
  }
  return Fetch::ready;
}

// SQ WQEs are fetched up to a max read request at a time; no WQE crosses the ring's end.
bool QpEngine::load_window(const QpContext& qp, SqWindow& window, uint32_t from) {
  window.first = from;
  window.count = std::min(kFetchQuanta, qp.sq_quanta - from);
  return dma_.read(qp.sq_base + uint64_t(from) * kQuantum, window.qwords, window.count * kQuantum,
                   {DmaPurpose::wqe_fetch, qp.id, qp.requests});
}

// The first quantum holds the header and fragment slot 0, each further one two more slots.
unsigned QpEngine::wqe_quanta(uint64_t hdr) { return 1 + (unsigned(get(hdr, WQE_ADDFRAGCNT)) + 1) / 2; }

// Fragment slot i sits at qwords {0,1} (i = 0) or {4 + 2(i-1), 5 + 2(i-1)}.
QpEngine::Fragments QpEngine::sq_fragments(const uint64_t* wqe) {
  return fragments(wqe, bit(wqe[3], SQ_WQE_IMMDATAFLAG) ? 1 : 0, unsigned(get(wqe[3], WQE_ADDFRAGCNT)) + 1);
}

QpEngine::Fragments QpEngine::fragments(const uint64_t* wqe, unsigned first_slot, unsigned slots) {
  Fragments out;
  for (unsigned i = first_slot; i < slots && i < 16; i++) {
    const uint64_t* s = i == 0 ? wqe : wqe + 4 + 2 * (i - 1);
    const uint32_t len = uint32_t(get(s[1], WQE_FRAG_LEN));
    if (!len) continue;
    out.stag[out.count] = uint32_t(get(s[1], WQE_FRAG_STAG));
    out.at[out.count++] = {s[0], len};
  }
  return out;
}

// The peer's next receive, into `dst`.
QpEngine::Receive QpEngine::next_receive(QpContext& peer, Fragments& dst) {
  const uint32_t rwqe_bytes = kQuantum << peer.rq_shift;
  uint64_t rwqe[(kQuantum << 3) / 8];
  if (!dma_.read(peer.rq_base + uint64_t(peer.rq_head.idx) * rwqe_bytes, rwqe, rwqe_bytes))
    return Receive::unreadable;
  if (bit(rwqe[3], WQE_VALID) != peer.rq_head.polarity) return Receive::none;
  time_.cycles(cfg_.cycles.wqe_decode);
  // An RQ WQE of 2^rq_shift quanta holds at most 1 + 2 (2^rq_shift - 1) fragment slots.
  const unsigned rq_slot_limit = 1 + 2 * ((1u << peer.rq_shift) - 1);
  unsigned rq_slots = unsigned(get(rwqe[3], WQE_ADDFRAGCNT)) + 1;
  if (rq_slots > rq_slot_limit) {
    counters_.wqe_errors++;
    rq_slots = rq_slot_limit;
  }
  dst = fragments(rwqe, 0, rq_slots);
  return Receive::posted;
}

uint16_t QpEngine::resolve(QpContext& qp, Fragments& f, bool device_writes) {
  bool keyed = false;
  for (unsigned i = 0; i < f.count; i++) keyed |= f.stag[i] != 0;
  if (!keyed) return 0;  // the global key's fragments are device addresses already
  std::vector<Extent>& out = local_;
  out.clear();
  for (unsigned i = 0; i < f.count; i++) {
    if (f.stag[i] == 0) {
      out.push_back(f.at[i]);
      continue;
    }
    if (const uint16_t ae = stags_.translate_local(f.stag[i], f.at[i].addr, f.at[i].len, device_writes, qp.pd, out)) {
      trace_.event(time_.now_ps(), "access_error").num("qp", qp.id).addr("stag", f.stag[i]).addr("ae", ae);
      qp.error_ae = ae;
      return FLUSH_PROT_ERR;  // every AMP_* event's flush code
    }
  }
  // A region of scattered pages can split a fragment past what the engine holds.
  if (out.size() > std::size(f.at)) return FLUSH_LOC_LEN_ERR;
  f.count = unsigned(out.size());
  for (unsigned i = 0; i < f.count; i++) {
    f.at[i] = out[i];
    f.stag[i] = 0;
  }
  return 0;
}

}  // namespace irdma_sim::device
