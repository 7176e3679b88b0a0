// Local work requests: NOP and the memory-key operations INV_STAG, FAST_REG_NSMR and
// BIND_MW, which change only the device's STag table.
#include "model/device/qp_engine.h"

#include "model/device/descriptor_fields.h"

namespace irdma_sim::device {

using namespace regs;

QpEngine::Result QpEngine::execute_local(QpContext& qp, const uint64_t* wqe, uint8_t op) {
  uint16_t err = 0;
  if (op == SQ_INV_STAG) {
    err = stags_.invalidate(uint32_t(get(wqe[1], SQ_WQE_LOCSTAG)));
  } else if (op == SQ_FAST_REG_NSMR) {
    err = fast_register(wqe);
  } else if (op == SQ_BIND_MW) {
    const StagGrant window{uint32_t(get(wqe[1], SQ_WQE_MWSTAG)), wqe[0], wqe[2],
                           uint8_t(get(wqe[3], SQ_WQE_STAGRIGHTS)), bit(wqe[3], SQ_WQE_REMOTE_ATOMICS_EN)};
    err = stags_.bind(window, uint32_t(get(wqe[1], SQ_WQE_PARENTMRSTAG)), bit(wqe[3], SQ_WQE_MEMWINDOWTYPE));
  }
  if (err) {
    enter_error(qp, err);
    return Result::failed;
  }
  if (bit(wqe[3], SQ_WQE_SIGCOMPL)) complete_sq(qp, op, 0, 0);
  return Result::done;
}

// FAST_REG_NSMR: one page's address in qword1, or (LPBLSIZE 1) a list in the HMC's PBLE
// object from FIRSTPMPBLIDX on.
uint16_t QpEngine::fast_register(const uint64_t* wqe) {
  const StagGrant g{uint32_t(get(wqe[3], SQ_WQE_STAG)), wqe[0], get(wqe[2], SQ_WQE_STAGLEN),
                    uint8_t(get(wqe[3], SQ_WQE_STAGRIGHTS)), bit(wqe[3], SQ_WQE_REMOTE_ATOMICS_EN)};
  const uint64_t npages = StagTable::pages_spanned(g.va, g.len);
  // VA-based, 4 KiB pages.
  if (!bit(wqe[3], SQ_WQE_VABASEDTO) || get(wqe[3], SQ_WQE_HPAGESIZE) != 0) return FLUSH_PROT_ERR;
  std::vector<uint64_t> pages;
  if (get(wqe[3], SQ_WQE_LPBLSIZE) == 0) {
    if (npages > 1) return FLUSH_PROT_ERR;
    pages.push_back(wqe[1] & ~(StagTable::kPage - 1));
  } else {
    const uint64_t first = get(wqe[1], SQ_WQE_FIRSTPMPBLIDXHI) << SQ_WQE_FIRSTPMPBLIDXLO.width() |
                           get(wqe[2], SQ_WQE_FIRSTPMPBLIDXLO);
    if (first + npages > hmc_.committed(Hmc::PBLE)) return FLUSH_PROT_ERR;  // before sizing by the WQE
    pages.resize(npages);
    if (!hmc_.read_pbles(first, npages, pages.data())) return FLUSH_PROT_ERR;
  }
  return stags_.fast_register(g, std::move(pages));
}

}  // namespace irdma_sim::device
