// Verilator headers first: verilated.h breaks in a --cc build if anything included SystemC
// before it, and this file must stay valid whatever the project headers include.
#include <verilated.h>
#include <verilated_cov.h>
#include <verilated_vcd_c.h>

#include "Vcq_writer.h"
#include "Vcq_writer___024root.h"
#include "Vcq_writer_toggle.h"
#include "Vcq_writer_toggle___024root.h"

#include "rtl_bridge/cqe_ports.h"
#include "rtl_bridge/rtl_cq_writer.h"
#include "rtl_bridge/verilated_block.h"

#include <array>
#include <fstream>

namespace irdma_sim::rtl {

using device::CqArmOutcome;
using device::CqeFields;
using device::CqRing;
using device::CqWriteOutcome;

namespace {

// cq_writer.v's encodings.
enum CtxOp : uint8_t { CTX_CREATE, CTX_RESIZE, CTX_DESTROY, CTX_ARM };
enum RspStatus : uint8_t { RSP_DONE, RSP_WRITTEN, RSP_OVERFLOWED, RSP_NO_CQ, RSP_ARMED, RSP_STALE, RSP_ARM_FAILED };
constexpr const char* kAssertions[] = {
    "a slot holding a CQE the driver has not consumed (or the ring's last free slot) was written on a "
    "CHKOVERFLOW CQ",
    "a main half was written before its extended half's write response",
    "an event was raised with no arm taken since the last",
};
constexpr uint8_t kAxiOkay = 0, kAxiSlverr = 2;

bool open(const std::function<bool()>& gate) { return !gate || gate(); }

}  // namespace

// What RtlCqWriter runs: the block Verilated with line coverage, or with toggle coverage too.
struct RtlCqWriter::Model {
  virtual ~Model() = default;
  virtual void context_command(uint8_t op, uint32_t cq, const CqRing& ring) = 0;
  virtual CqWriteOutcome write(uint32_t cq, const CqeFields& fields) = 0;
  virtual CqArmOutcome arm(uint32_t cq) = 0;
  virtual uint64_t last_cycles() const = 0;
  virtual uint64_t cycles() const = 0;
  virtual void set_throttle(Throttle throttle) = 0;
  virtual void flip_armed_bit(uint32_t cq) = 0;
  virtual void enable_vcd(const std::string& path, uint64_t period_ps) = 0;
  virtual void write_coverage(const std::string& path) = 0;
};

namespace {

template <typename Top>
struct Block final : RtlCqWriter::Model {
  using Throttle = RtlCqWriter::Throttle;
  using Timing = RtlCqWriter::Timing;
  static constexpr uint32_t kMaxCqs = RtlCqWriter::kMaxCqs;
  static constexpr uint32_t kMaxRingSize = (1u << 21) - 1;  // ctx_size's 21 bits
  static constexpr uint32_t kMaxThreshold = (1u << 18) - 1;  // ctx_threshold's 18 bits

  device::CqWriterPort& port;
  const Timing timing;
  const device::StageCycles model_cycles;
  VerilatedBlock<Top> block{"RtlCqWriter"};
  Top& top = block.top();
  Throttle throttle;
  uint64_t last = 0;
  uint64_t charged = 0;  // cycles the engine was charged up to (Timing::rtl)

  // The AXI slave: one write burst and one read burst at a time (the master issues no more).
  // A write's data may come before its address; a response, once offered, stays offered
  // until taken.
  bool aw_taken = false, aw_main = false, w_complete = false;
  uint64_t aw_addr = 0;
  unsigned w_beats = 0;
  std::array<uint64_t, 4> w_data{};
  bool b_pending = false, b_offered = false, b_ok = false;
  bool r_pending = false, r_offered = false, r_ok = false;
  unsigned r_beat = 0, r_beats = 0;
  std::array<uint64_t, 256> r_data{};
  CqWriteOutcome written;  // the halves of the request in hand

  Block(device::CqWriterPort& p, Timing t, const device::StageCycles& c) : port(p), timing(t), model_cycles(c) {
    block.reset(
        [](Top& v) {
          v.ctx_valid = v.cpl_valid = v.rsp_ready = 0;
          v.m_axi_awready = v.m_axi_wready = v.m_axi_bvalid = v.m_axi_arready = v.m_axi_rvalid = 0;
        },
        kMaxCqs);
  }

  void charge_rtl() {
    if (timing == Timing::rtl) port.cycles(uint32_t(block.cycles() - charged));
    charged = block.cycles();
  }
  // Timing::model: the stage costs at the points TlmCqWriter charges them. A request's
  // intake goes before its first memory access, or at its response unless there was no
  // such CQ; a read's issue before it and its beats after; a half's formatting and beats
  // before it lands; the response's cost at the response.
  enum class Request { completion, arm, context };
  Request request = Request::context;
  bool intake_due = false;
  void charge_model(uint32_t n) {
    if (timing == Timing::model) port.cycles(n);
  }
  void charge_intake() {
    if (!intake_due) return;
    intake_due = false;
    charge_model(model_cycles.cq_intake);
  }

  void check_assertions() const {
    const unsigned fired = top.assert_fired;
    if (!fired) return;
    std::string msg = "cq_writer RTL assertion at cycle " + std::to_string(block.cycles()) + ":";
    for (unsigned i = 0; i < std::size(kAssertions); i++)
      if (fired >> i & 1) msg += std::string("\n  ") + kAssertions[i];
    throw RtlAssertionError(msg);
  }

  // Runs the request the caller drove (its valid raised) until its response: the slave's
  // side of each cycle is decided from the block's registered outputs, then the edge.
  void run() {
    // A request a throw cut short left the handshakes mid-way: nothing after it is sound.
    if (broken) throw std::logic_error("RtlCqWriter: used after a request failed (" + broken_by + ")");
    try {
      run_request();
    } catch (const std::exception& e) {
      broken = true;
      broken_by = e.what();
      throw;
    }
  }
  bool broken = false;
  std::string broken_by;

  void run_request() {
    intake_due = request != Request::context;
    at_time_ps(port.now_ps());
    const uint64_t start = block.cycles();
    charged = start;
    written = {};
    bool offered = true;
    for (;;) {
      top.m_axi_awready = !aw_taken && top.m_axi_awvalid && open(throttle.aw_ready);
      top.m_axi_wready = !w_complete && top.m_axi_wvalid && open(throttle.w_ready);
      b_offered = b_offered || (b_pending && open(throttle.b_valid));
      top.m_axi_bvalid = b_offered;
      top.m_axi_bresp = b_ok ? kAxiOkay : kAxiSlverr;
      top.m_axi_arready = !r_pending && top.m_axi_arvalid && open(throttle.ar_ready);
      r_offered = r_offered || (r_pending && open(throttle.r_valid));
      top.m_axi_rvalid = r_offered;
      top.m_axi_rdata = r_data[r_beat < r_beats ? r_beat : 0];
      top.m_axi_rresp = r_ok ? kAxiOkay : kAxiSlverr;
      top.m_axi_rlast = r_beat + 1 == r_beats;
      top.rsp_ready = top.rsp_valid && open(throttle.rsp_ready);

      const bool req_fire = offered && (request == Request::completion ? top.cpl_ready : top.ctx_ready);
      const bool aw_fire = top.m_axi_awvalid && top.m_axi_awready;
      const bool w_fire = top.m_axi_wvalid && top.m_axi_wready;
      const bool w_last = w_fire && top.m_axi_wlast;
      const bool b_fire = top.m_axi_bvalid && top.m_axi_bready;
      const bool ar_fire = top.m_axi_arvalid && top.m_axi_arready;
      const bool r_fire = top.m_axi_rvalid && top.m_axi_rready;
      const bool rsp_fire = top.rsp_valid && top.rsp_ready;
      // Nothing held back this cycle by the slave: the block must move within the limit.
      const bool held = (top.m_axi_awvalid && !aw_taken && !top.m_axi_awready) ||
                        (top.m_axi_wvalid && !w_complete && !top.m_axi_wready) || (b_pending && !top.m_axi_bvalid) ||
                        (top.m_axi_arvalid && !r_pending && !top.m_axi_arready) || (r_pending && !top.m_axi_rvalid) ||
                        (top.rsp_valid && !top.rsp_ready);
      block.watch(req_fire || aw_fire || w_fire || b_fire || ar_fire || r_fire || rsp_fire, !held);
      if (aw_fire) {
        aw_taken = true;
        aw_addr = top.m_axi_awaddr;
        aw_main = top.m_axi_awuser;
      }
      if (w_fire) w_data[w_beats++ & 3] = top.m_axi_wdata;
      if (rsp_fire) collect_response();
      const uint8_t arlen = top.m_axi_arlen;
      const uint64_t araddr = top.m_axi_araddr;
      block.tick();
      check_assertions();
      if (req_fire) {
        offered = false;
        top.ctx_valid = top.cpl_valid = 0;
      }
      w_complete = w_complete || w_last;
      if (aw_taken && w_complete) finish_write_burst();
      if (b_fire) b_pending = b_offered = false;
      if (ar_fire) read_burst(araddr, arlen + 1u);
      if (r_fire) {
        r_offered = false;
        r_pending = ++r_beat != r_beats;
      }
      if (rsp_fire) break;
    }
    charge_rtl();
    last = block.cycles() - start;
  }

  // A half: one write of its 32 bytes, valid qword last.
  void finish_write_burst() {
    charge_intake();
    charge_model(model_cycles.cqe_format + model_cycles.cqe_write);
    charge_rtl();
    b_ok = port.write(aw_addr, w_data.data(), sizeof w_data);
    b_pending = true;
    aw_taken = w_complete = false;
    w_beats = 0;
    (aw_main ? written.main : written.ext) = device::CqeHalf{w_data[0], w_data[1], w_data[2], w_data[3]};
  }

  void read_burst(uint64_t addr, unsigned beats) {
    charge_intake();
    charge_model(model_cycles.cq_read);
    charge_rtl();
    r_ok = port.read(addr, r_data.data(), beats * 8);
    charge_model(model_cycles.cq_read_beat * beats);
    r_pending = true;
    r_beat = 0;
    r_beats = beats;
  }

  // The response ports' outcome, kept until the request's end.
  RspStatus status = RSP_DONE;
  void collect_response() {
    status = RspStatus(top.rsp_status);
    if (status == RSP_NO_CQ) intake_due = false;
    charge_intake();
    if (request == Request::context)
      charge_model(model_cycles.cq_context);
    else if (status != RSP_NO_CQ)
      charge_model(model_cycles.cq_respond);
    written.slot = top.rsp_slot;
    written.wrapped = top.rsp_wrapped;
    written.head_read = top.rsp_head_read;
    written.overflow_began = top.rsp_overflow_began;
    written.event = top.rsp_event;
    written.ceqe = top.rsp_ceqe;
    written.solicited_only = top.rsp_solicited_only;
    written.write_error = top.rsp_write_error;
    arms = top.rsp_armed;
  }
  bool arms = false;

  void context_command(uint8_t op, uint32_t cq, const CqRing& ring) override {
    check_cq(cq);
    if ((op == CTX_CREATE || op == CTX_RESIZE) &&
        (ring.size < 2 || ring.size > kMaxRingSize || ring.shadow_read_threshold > kMaxThreshold))
      throw std::out_of_range("RtlCqWriter: a ring of " + std::to_string(ring.size) + " entries (2 to " +
                              std::to_string(kMaxRingSize) + ") with a shadow read threshold of " +
                              std::to_string(ring.shadow_read_threshold) + " (at most " +
                              std::to_string(kMaxThreshold) + ")");
    top.ctx_op = op;
    top.ctx_cq = cq;
    top.ctx_base = ring.base;
    top.ctx_size = ring.size;
    top.ctx_shadow = ring.shadow;
    top.ctx_threshold = ring.shadow_read_threshold;
    top.ctx_check_overflow = ring.check_overflow;
    top.ctx_ceqe_enable = ring.ceqe_enable;
    top.ctx_cqe_64byte = ring.cqe_64byte;
    top.ctx_valid = 1;
    request = op == CTX_ARM ? Request::arm : Request::context;
    run();
    // An arm's statuses are arm()'s to read; a context command is done, or (a resize) finds
    // no such CQ.
    if (op != CTX_ARM && status != RSP_DONE && !(op == CTX_RESIZE && status == RSP_NO_CQ))
      throw unexpected("a context command", status);
  }

  void at_time_ps(uint64_t t) { block.at_time_ps(t); }

  std::logic_error unexpected(const char* request, RspStatus s) {
    broken = true;
    broken_by = "response status " + std::to_string(s) + " to " + request;
    return std::logic_error("RtlCqWriter: the RTL answered " + broken_by);
  }

  static void check_cq(uint32_t cq) {
    if (cq >= kMaxCqs)
      throw std::out_of_range("RtlCqWriter: CQ " + std::to_string(cq) + " is past the RTL's " +
                              std::to_string(kMaxCqs) + " contexts");
  }

  CqWriteOutcome write(uint32_t cq, const CqeFields& fields) override {
    check_cq(cq);
    drive_cqe_fields(top, fields);
    top.cpl_cq = cq;
    top.cpl_valid = 1;
    request = Request::completion;
    run();
    CqWriteOutcome out = written;
    switch (status) {
      case RSP_WRITTEN: out.status = CqWriteOutcome::written; break;
      case RSP_OVERFLOWED: out.status = CqWriteOutcome::overflowed; break;
      case RSP_NO_CQ: out.status = CqWriteOutcome::no_cq; break;
      default: throw unexpected("a completion", status);
    }
    if (out.status != CqWriteOutcome::written) {
      out.slot = 0;
      out.main = out.ext = {};
    } else if (!fields.extended) {
      out.ext = {};
    }
    return out;
  }

  CqArmOutcome arm(uint32_t cq) override {
    CqArmOutcome out;
    context_command(CTX_ARM, cq, {});
    switch (status) {
      case RSP_ARMED: out.status = CqArmOutcome::armed; break;
      case RSP_STALE: out.status = CqArmOutcome::stale; break;
      case RSP_ARM_FAILED: out.status = CqArmOutcome::failed; break;
      case RSP_NO_CQ: out.status = CqArmOutcome::no_cq; break;
      default: throw unexpected("an arm", status);
    }
    if (out.status == CqArmOutcome::armed || out.status == CqArmOutcome::stale)
      out.solicited_only = written.solicited_only;
    if (out.status == CqArmOutcome::armed) {
      out.arms = arms;
      out.event = written.event;
      out.ceqe = written.ceqe;
    }
    return out;
  }

  uint64_t last_cycles() const override { return last; }
  uint64_t cycles() const override { return block.cycles(); }
  void set_throttle(Throttle t) override { throttle = std::move(t); }
  void flip_armed_bit(uint32_t cq) override {
    check_cq(cq);
    top.rootp->cq_writer__DOT__armed_m[cq] ^= 1;
  }
  void enable_vcd(const std::string& path, uint64_t period_ps) override { block.enable_vcd(path, period_ps); }
  void write_coverage(const std::string& path) override { block.context().coveragep()->write(path.c_str()); }
};

}  // namespace

RtlCqWriter::RtlCqWriter(device::CqWriterPort& port, Timing timing, const device::StageCycles& model_cycles,
                         bool toggle_coverage) {
  if (toggle_coverage)
    model_ = std::make_unique<Block<Vcq_writer_toggle>>(port, timing, model_cycles);
  else
    model_ = std::make_unique<Block<Vcq_writer>>(port, timing, model_cycles);
}

RtlCqWriter::~RtlCqWriter() = default;

void RtlCqWriter::create(uint32_t cq, const CqRing& ring) { model_->context_command(CTX_CREATE, cq, ring); }
void RtlCqWriter::resize(uint32_t cq, const CqRing& ring) { model_->context_command(CTX_RESIZE, cq, ring); }
void RtlCqWriter::destroy(uint32_t cq) { model_->context_command(CTX_DESTROY, cq, {}); }
CqWriteOutcome RtlCqWriter::write(uint32_t cq, const CqeFields& fields) { return model_->write(cq, fields); }
CqArmOutcome RtlCqWriter::arm(uint32_t cq) { return model_->arm(cq); }
uint64_t RtlCqWriter::last_cycles() const { return model_->last_cycles(); }
void RtlCqWriter::set_throttle(Throttle throttle) { model_->set_throttle(std::move(throttle)); }
void RtlCqWriter::flip_armed_bit(uint32_t cq) { model_->flip_armed_bit(cq); }
uint64_t RtlCqWriter::cycles() const { return model_->cycles(); }
void RtlCqWriter::enable_vcd(const std::string& path, uint64_t period_ps) { model_->enable_vcd(path, period_ps); }

// Verilator's .dat lines: C '<key>\x02<value>\x01...' <count>; the "page" key says the kind
// of point (v_line/..., v_toggle/..., v_branch/...).
RtlCqWriter::Coverage RtlCqWriter::write_coverage(const std::string& path) {
  // Written whole or not at all, through a temporary file; Verilator ends the process when
  // it cannot write one, so that is tried first.
  const std::string tmp = path + ".tmp";
  if (!std::ofstream(tmp)) throw std::runtime_error("RtlCqWriter: cannot write the coverage file " + path);
  model_->write_coverage(tmp);
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error("RtlCqWriter: cannot write the coverage file " + path);
  std::ifstream in(path);
  Coverage c;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("C '", 0) != 0) continue;
    const size_t page = line.find("page\x02v_");
    const size_t end = line.rfind('\'');
    if (page == std::string::npos || end == std::string::npos) continue;
    const bool hit = std::stoull(line.substr(end + 1)) != 0;
    const std::string kind = line.substr(page + 7, line.find('/', page) - page - 7);
    if (kind == "line" || kind == "branch") {
      c.line_total++;
      c.line_hit += hit;
    } else if (kind == "toggle") {
      c.toggle_total++;
      c.toggle_hit += hit;
    }
  }
  return c;
}

}  // namespace irdma_sim::rtl
