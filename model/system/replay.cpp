#include "model/system/replay.h"

#include <filesystem>
#include <memory>
#include <utility>

#include <systemc>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "model/device/irdma_device.h"
#include "model/platform/pcie_link.h"
#include "model/sc_compat.h"
#include "model/system/elaboration.h"
#include "model/system/run_scenario.h"
#include "model/testbench/scenario.h"
#include "model/system/stimulus.h"
#include "model/testbench/yaml_reader.h"
#include "model/trace/trace_log.h"

namespace irdma_sim::system {

using testbench::ScenarioError;
namespace {

using sc_core::sc_time;

// The device a replay checks a checker with: every CQE's main half has one bit flipped.
class FlippedBitFormatter final : public device::CqeFormatter {
 public:
  FlippedBitFormatter(std::unique_ptr<device::CqeFormatter> inner, unsigned bit)
      : inner_(std::move(inner)), bit_(bit) {}
  void at_time_ps(uint64_t t) override { inner_->at_time_ps(t); }
  device::CqeHalf format_main(const device::CqeFields& f, bool polarity) override {
    device::CqeHalf h = inner_->format_main(f, polarity);
    h[bit_ / 64] ^= 1ull << (bit_ % 64);
    return h;
  }
  device::CqeHalf format_ext(const device::CqeFields& f, bool polarity) override {
    return inner_->format_ext(f, polarity);
  }

 private:
  std::unique_ptr<device::CqeFormatter> inner_;
  unsigned bit_;
};

// The recorded host: issues the recorded MMIO at its times, answers the device's reads with
// the recorded bytes, and holds each of its writes and MSI-X messages against the next one
// recorded.
class ReplayHost : public sc_core::sc_module {
 public:
  IRDMA_SC_HAS_PROCESS(ReplayHost);
  tlm_utils::simple_initiator_socket<ReplayHost> mmio;
  tlm_utils::simple_target_socket<ReplayHost> memory;

  ReplayHost(sc_core::sc_module_name name, StimulusReader& in, device::IrdmaDevice& device)
      : sc_module(name), mmio("mmio"), memory("memory"), in_(in), device_(device) {
    memory.register_b_transport(this, &ReplayHost::b_transport);
    SC_THREAD(drive);
  }

  void msix(uint32_t data) {
    StimulusEvent replayed;
    replayed.kind = StimulusEvent::msix;
    replayed.msi_data = data;
    if (expect(replayed)) result.msix++;
  }

  // After the simulation ran out of work: what the recording has that the replay did not do.
  void finish() {
    StimulusEvent left;
    result.cut_at_line = in_.cut_at_line();
    if (result.identical && !result.cut_at_line && next_device(left))
      differ("the replayed device went idle; the recording goes on with " + left.describe() + " (line " +
             std::to_string(left.line) + ")");
  }

  ReplayResult result;

 private:
  void drive() {
    StimulusEvent ev;
    while (result.identical && next_host(ev)) {
      const uint64_t now = sc_core::sc_time_stamp().value();
      if (ev.t_ps > now) sc_core::wait(sc_time::from_value(ev.t_ps - now));
      if (!result.identical) return;
      if (ev.kind == StimulusEvent::fault) {
        device_.inject_fault(ev.qp, ev.nth, ev.code);
        continue;
      }
      if (ev.kind == StimulusEvent::force_msix) {
        device_.schedule_msix(ev.msi_data);
        continue;
      }
      std::vector<uint8_t> data = ev.write ? ev.data : std::vector<uint8_t>(ev.len);
      tlm::tlm_generic_payload t;
      t.set_command(ev.write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
      t.set_address(ev.addr);
      t.set_data_ptr(data.data());
      t.set_data_length(ev.len);
      t.set_streaming_width(ev.len);
      t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
      sc_time delay = sc_core::SC_ZERO_TIME;
      mmio->b_transport(t, delay);
      result.mmio++;
      // A register read or a refusal is the device's answer: held against the recorded one.
      const bool ok = t.is_response_ok();
      if (ev.answered && (ok != ev.ok || (!ev.write && ok && data != ev.data))) {
        StimulusEvent replayed = ev;
        replayed.ok = ok;
        if (!ev.write) replayed.data = ok ? data : std::vector<uint8_t>{};
        differ("host access " + std::to_string(result.mmio) + " at " + std::to_string(ev.t_ps) + " ps: recorded " +
               ev.describe() + " (line " + std::to_string(ev.line) + "), replayed " + replayed.describe());
        return;
      }
    }
  }

  void b_transport(tlm::tlm_generic_payload& trans, sc_time&) {
    StimulusEvent replayed;
    replayed.kind = trans.is_write() ? StimulusEvent::dma_write : StimulusEvent::dma_read;
    replayed.addr = trans.get_address();
    replayed.len = trans.get_data_length();
    if (trans.is_write()) replayed.data.assign(trans.get_data_ptr(), trans.get_data_ptr() + replayed.len);
    StimulusEvent recorded;
    if (!expect(replayed, &recorded)) {
      trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
      return;
    }
    if (trans.is_read()) {
      result.reads++;
      if (recorded.ok) std::copy(recorded.data.begin(), recorded.data.end(), trans.get_data_ptr());
    } else {
      result.writes++;
    }
    trans.set_response_status(recorded.ok ? tlm::TLM_OK_RESPONSE : tlm::TLM_ADDRESS_ERROR_RESPONSE);
  }

  // Whether `replayed` is the next device access recorded (its data too, for a write).
  bool expect(const StimulusEvent& replayed, StimulusEvent* recorded_out = nullptr) {
    if (!result.identical) return false;
    StimulusEvent recorded;
    const uint64_t index = result.reads + result.writes + result.msix + 1;
    const std::string at = "device access " + std::to_string(index) + " at " +
                           std::to_string(sc_core::sc_time_stamp().value()) + " ps: ";
    if (!next_device(recorded)) {
      if (malformed) return false;
      if (in_.cut_at_line()) {  // the recording stops here, not the device: nothing more to compare
        cut_short();
        return false;
      }
      differ(at + "the replayed device made " + replayed.describe() + " past the recording's end");
      return false;
    }
    const bool same = recorded.kind == replayed.kind && recorded.addr == replayed.addr &&
                      recorded.len == replayed.len && recorded.msi_data == replayed.msi_data &&
                      (replayed.kind != StimulusEvent::dma_write || recorded.data == replayed.data);
    if (!same) {
      std::string what = at + "recorded " + recorded.describe() + " (line " + std::to_string(recorded.line) +
                         "), replayed " + replayed.describe();
      if (recorded.kind == replayed.kind && recorded.data.size() == replayed.data.size())
        for (size_t i = 0; i < recorded.data.size(); i++)
          if (recorded.data[i] != replayed.data[i]) {
            // The bits by their number in the write, as --flip-cqe-bit numbers a CQE half's.
            std::string bits;
            for (unsigned b = 0; b < 8; b++)
              if ((recorded.data[i] ^ replayed.data[i]) >> b & 1)
                bits += (bits.empty() ? "" : ", ") + std::to_string(i * 8 + b);
            what += "; first differing byte " + std::to_string(i) + " (bit " + bits + " of the write flipped)";
            break;
          }
      differ(what);
      return false;
    }
    if (recorded_out) *recorded_out = std::move(recorded);
    return true;
  }

  void cut_short() {
    result.cut_at_line = in_.cut_at_line();
    sc_core::sc_stop();
  }

  void differ(std::string what) {
    result.identical = false;
    result.difference = std::move(what);
    sc_core::sc_stop();
  }

  // The reader's next events; a malformed line ends the replay, rethrown by replay_run.
  bool next_host(StimulusEvent& ev) { return read([&] { return in_.next_mmio(ev); }); }
  bool next_device(StimulusEvent& ev) { return read([&] { return in_.next_device(ev); }); }
  template <typename Read>
  bool read(Read&& r) {
    try {
      return r();
    } catch (const std::runtime_error&) {
      malformed = std::current_exception();
      result.identical = false;
      sc_core::sc_stop();
      return false;
    }
  }

 public:
  std::exception_ptr malformed;

 private:
  StimulusReader& in_;
  device::IrdmaDevice& device_;
};

}  // namespace

ReplayResult replay_run(const std::string& run_dir, const ReplayOptions& options) {
  const std::filesystem::path dir(run_dir);
  for (const char* needed : {"scenario.yaml", "stimulus.jsonl"})
    if (!std::filesystem::exists(dir / needed))
      throw ScenarioError(run_dir + " has no " + needed + ": replay needs a run made with --record");
  // Nothing recorded compares as identical to anything: refused, not passed.
  std::error_code size_ec;
  if (std::filesystem::file_size(dir / "stimulus.jsonl", size_ec) == 0 && !size_ec)
    throw ScenarioError(run_dir + "/stimulus.jsonl is empty: the run recorded nothing (killed before the device "
                        "was first touched?), so there is nothing to replay");
  testbench::Scenario sc = testbench::load_scenario((dir / "scenario.yaml").string());
  if (sc.config.sync != testbench::SyncMode::approximate)
    throw ScenarioError(run_dir + ": a loosely timed run cannot be replayed (its device's order of work depends on "
                        "where its quantum fell); record it with sync.mode approximate");
  device::DeviceConfig& d = sc.config.device;
  if (options.formatter) d.formatter = *options.formatter;
  // A replay writes no waveform and no coverage.
  d.rtl_vcd.clear();
  d.rtl_toggle_coverage = false;
  testbench::override_cq_writer(d, options.cq_writer, options.cq_writer_timing, sc.file);
  if (options.formatter && d.cq_writer == device::CqWriterKind::rtl)
    throw ScenarioError("--formatter chooses the TLM writer's formatter; this replay runs the RTL CQ writer, which has "
                        "its own (replay with --cq-writer tlm)");
  if (options.flip_cqe_bit > 255) throw ScenarioError("--flip-cqe-bit: a CQE half has bits 0 to 255");

  begin_elaboration("replay");
  trace::TraceLog no_trace;
  const bool approximate = sc.config.sync == testbench::SyncMode::approximate;
  const sc_time quantum = approximate ? sc_core::SC_ZERO_TIME : sc_time(sc.config.quantum_ns, sc_core::SC_NS);
  if (options.flip_cqe_bit >= 0 && d.cq_writer == device::CqWriterKind::rtl)
    throw ScenarioError("--flip-cqe-bit changes the TLM writer's formatter; the RTL CQ writer formats with its own "
                        "(replay with --cq-writer tlm)");
  FormatterFactory formatter;
  if (options.flip_cqe_bit >= 0)
    formatter = [d, bit = unsigned(options.flip_cqe_bit)] {
      return std::make_unique<FlippedBitFormatter>(make_formatter(d), bit);
    };
  platform::PcieLink link("pcie_link", sc.config.link, approximate, no_trace);
  device::IrdmaDevice device("irdma", d, quantum, no_trace, make_cq_writer(d, formatter));
  StimulusReader in((dir / "stimulus.jsonl").string());
  ReplayHost host("replay_host", in, device);
  host.mmio.bind(link.host_mmio);
  link.dev_bar.bind(device.pci);
  device.dma.bind(link.dev_dma);
  link.host_mem.bind(host.memory);
  link.on_msi = [&](uint32_t data, sc_time) { host.msix(data); };
  sc_core::sc_start();
  if (!host.malformed) host.finish();
  if (host.malformed) std::rethrow_exception(host.malformed);
  return host.result;
}

}  // namespace irdma_sim::system
