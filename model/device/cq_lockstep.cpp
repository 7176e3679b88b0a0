#include "model/device/cq_lockstep.h"

#include <algorithm>
#include <cstring>

#include "model/trace/text.h"

namespace irdma_sim::device {

void CqCycleStats::add(uint64_t dut, uint64_t model) {
  requests++;
  dut_cycles += dut;
  model_cycles += model;
  dut_max = std::max(dut_max, dut);
  dut_histogram[std::min<uint64_t>(dut, kBins - 1)]++;
}

uint64_t CqCycleStats::dut_quantile(double fraction) const {
  const double want = fraction * double(requests);
  uint64_t seen = 0;
  for (unsigned c = 0; c < kBins; c++)
    if (double(seen += dut_histogram[c]) >= want && seen) return c;
  return kBins - 1;
}

const char* CqCorrelation::name(Kind k) {
  static constexpr const char* names[kKinds] = {"cqe",   "extended_cqe", "cqe_head_read", "dropped",
                                                "no_cq", "arm",          "context"};
  return names[k];
}

// The writer under test's accesses go on to the engine and are kept for the twin.
class LockstepCqWriter::RecordingPort final : public CqWriterPort {
 public:
  explicit RecordingPort(CqWriterPort& engine) : engine_(engine) {}
  bool read(uint64_t addr, void* dst, uint32_t len) override {
    Access& a = add(false, addr, len);
    a.ok = engine_.read(addr, dst, len);
    if (a.ok) std::memcpy(a.bytes.data(), dst, std::min<size_t>(len, a.bytes.size()));
    return a.ok;
  }
  bool write(uint64_t addr, const void* src, uint32_t len) override {
    Access& a = add(true, addr, len);
    std::memcpy(a.bytes.data(), src, std::min<size_t>(len, a.bytes.size()));
    return a.ok = engine_.write(addr, src, len);
  }
  void cycles(uint32_t n) override { engine_.cycles(n); }
  uint64_t now_ps() const override { return engine_.now_ps(); }

  std::vector<Access> accesses;

 private:
  Access& add(bool write, uint64_t addr, uint32_t len) {
    Access& a = accesses.emplace_back();
    a.write = write;
    a.addr = addr;
    a.len = len;
    return a;
  }
  CqWriterPort& engine_;
};

// The twin's accesses: a read is answered from what the writer under test read at the same
// point (and is itself a disagreement when that was not the same read); writes are kept.
class LockstepCqWriter::TwinPort final : public CqWriterPort {
 public:
  TwinPort(const RecordingPort& dut, CqWriterPort& engine) : dut_(dut), engine_(engine) {}
  bool read(uint64_t addr, void* dst, uint32_t len) override {
    const size_t at = accesses.size();
    Access& a = accesses.emplace_back();
    a.addr = addr;
    a.len = len;
    if (at >= dut_.accesses.size()) return false;
    const Access& d = dut_.accesses[at];
    if (d.write || d.addr != addr || d.len != len) return false;  // accesses_differ names it
    a.ok = d.ok;
    a.bytes = d.bytes;
    if (a.ok) std::memcpy(dst, d.bytes.data(), std::min<size_t>(len, d.bytes.size()));
    return a.ok;
  }
  bool write(uint64_t addr, const void* src, uint32_t len) override {
    const size_t at = accesses.size();
    Access& a = accesses.emplace_back();
    a.write = true;
    a.addr = addr;
    a.len = len;
    std::memcpy(a.bytes.data(), src, std::min<size_t>(len, a.bytes.size()));
    // The outcome of the writer under test's write at this point: a refused write is an
    // outcome both must report.
    a.ok = at < dut_.accesses.size() ? dut_.accesses[at].ok : true;
    return a.ok;
  }
  void cycles(uint32_t) override {}  // the twin's cycles are its last_cycles()
  uint64_t now_ps() const override { return engine_.now_ps(); }

  std::vector<Access> accesses;

 private:
  const RecordingPort& dut_;
  CqWriterPort& engine_;
};

LockstepCqWriter::LockstepCqWriter(CqWriterPort& port, const CqWriterFactory& make_dut, const StageCycles& cycles,
                                   std::string dut_name)
    : recording_(std::make_unique<RecordingPort>(port)),
      twin_port_(std::make_unique<TwinPort>(*recording_, port)),
      dut_(make_dut(*recording_)),
      twin_(*twin_port_, cycles, std::make_unique<TlmCqeFormatter>()),
      dut_name_(std::move(dut_name)) {}

LockstepCqWriter::~LockstepCqWriter() = default;

void LockstepCqWriter::begin() {
  recording_->accesses.clear();
  twin_port_->accesses.clear();
  requests_++;
}

void LockstepCqWriter::count(CqCorrelation::Kind kind) {
  correlation_.kinds[kind].add(dut_->last_cycles(), twin_.last_cycles());
}

namespace {

std::string describe(const LockstepCqWriter::Access& a) {
  std::string s = a.write ? "write " : "read ";
  trace::append_number(s, a.len);
  s += " bytes at 0x";
  trace::append_number(s, a.addr, 16);
  if (a.write || a.ok) {
    s += a.write ? ": " : " -> ";
    trace::append_hex(s, a.bytes.data(), std::min<size_t>(a.len, a.bytes.size()));
  }
  if (!a.ok) s += a.write ? " (refused)" : " (error)";
  return s;
}

std::string describe(const CqWriteOutcome& o) {
  static constexpr const char* status[] = {"written", "overflowed", "no CQ"};
  std::string s = status[o.status];
  if (o.status == CqWriteOutcome::written) {
    s += " at slot ";
    trace::append_number(s, o.slot);
  }
  for (auto [flag, name] : {std::pair{o.wrapped, " wrapped"}, {o.head_read, " head_read"},
                            {o.overflow_began, " overflow_began"}, {o.event, " event"}, {o.ceqe, " ceqe"},
                            {o.solicited_only, " solicited_only"}, {o.write_error, " write_error"}})
    if (flag) s += name;
  return s;
}

std::string describe(const CqArmOutcome& o) {
  static constexpr const char* status[] = {"armed", "stale", "failed", "no CQ"};
  std::string s = status[o.status];
  for (auto [flag, name] : {std::pair{o.arms, " arms"}, {o.solicited_only, " solicited_only"},
                            {o.event, " event"}, {o.ceqe, " ceqe"}})
    if (flag) s += name;
  return s;
}

std::string cq_request(const char* what, uint32_t cq) {
  std::string s = what;
  s += " on CQ ";
  trace::append_number(s, cq);
  return s;
}

}  // namespace

void LockstepCqWriter::disagree(const std::string& what, const std::string& dut_view,
                                const std::string& twin_view) const {
  std::string msg = "cq_writer lock-step: request ";
  trace::append_number(msg, requests_);
  msg += " (" + what + "): the " + dut_name_ + " and the TLM twin disagree\n  " + dut_name_ + ": " + dut_view +
         "\n  TLM: " + twin_view;
  throw CqLockstepError(msg);
}

bool LockstepCqWriter::accesses_differ(std::string& dut_view, std::string& twin_view) const {
  const auto& dut = recording_->accesses;
  const auto& twin = twin_port_->accesses;
  for (size_t i = 0; i < std::max(dut.size(), twin.size()); i++) {
    const Access* d = i < dut.size() ? &dut[i] : nullptr;
    const Access* t = i < twin.size() ? &twin[i] : nullptr;
    if (d && t && d->write == t->write && d->addr == t->addr && d->len == t->len &&
        (!d->write || std::memcmp(d->bytes.data(), t->bytes.data(), std::min<size_t>(d->len, d->bytes.size())) == 0))
      continue;
    const std::string index = "access " + std::to_string(i + 1) + ": ";
    dut_view = index + (d ? describe(*d) : "none");
    twin_view = index + (t ? describe(*t) : "none");
    return true;
  }
  return false;
}

void LockstepCqWriter::agree(const char* request, uint32_t cq) const {
  std::string dut_view, twin_view;
  if (accesses_differ(dut_view, twin_view)) disagree(cq_request(request, cq), dut_view, twin_view);
}

void LockstepCqWriter::create(uint32_t cq, const CqRing& ring) {
  begin();
  dut_->create(cq, ring);
  twin_.create(cq, ring);
  agree("create", cq);
  count(CqCorrelation::context);
}

void LockstepCqWriter::resize(uint32_t cq, const CqRing& ring) {
  begin();
  dut_->resize(cq, ring);
  twin_.resize(cq, ring);
  agree("resize", cq);
  count(CqCorrelation::context);
}

void LockstepCqWriter::destroy(uint32_t cq) {
  begin();
  dut_->destroy(cq);
  twin_.destroy(cq);
  agree("destroy", cq);
  count(CqCorrelation::context);
}

CqWriteOutcome LockstepCqWriter::write(uint32_t cq, const CqeFields& fields) {
  begin();
  const CqWriteOutcome dut = dut_->write(cq, fields);
  const CqWriteOutcome twin = twin_.write(cq, fields);
  std::string dut_view, twin_view;
  const bool differ = accesses_differ(dut_view, twin_view);
  if (!differ && !(dut == twin)) {
    dut_view = describe(dut);
    twin_view = describe(twin);
  }
  if (differ || !(dut == twin))
    disagree(cq_request("completion", cq) + " for QP " + std::to_string(fields.qp_id) + " wqe_idx " +
                 std::to_string(fields.wqe_idx),
             dut_view, twin_view);
  count(dut.status == CqWriteOutcome::no_cq     ? CqCorrelation::no_cq
        : dut.status != CqWriteOutcome::written ? CqCorrelation::dropped
        : dut.head_read                       ? CqCorrelation::cqe_head_read
        : fields.extended                     ? CqCorrelation::extended_cqe
                                              : CqCorrelation::cqe);
  return dut;
}

CqArmOutcome LockstepCqWriter::arm(uint32_t cq) {
  begin();
  const CqArmOutcome dut = dut_->arm(cq);
  const CqArmOutcome twin = twin_.arm(cq);
  agree("arm", cq);
  if (!(dut == twin)) disagree(cq_request("arm", cq), describe(dut), describe(twin));
  count(CqCorrelation::arm);
  return dut;
}

}  // namespace irdma_sim::device
