#include "model/system/stimulus.h"

#include "model/trace/text.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace irdma_sim::system {
namespace {

using trace::append_hex;
using trace::append_number;
using trace::kHexDigits;

// The text after `"key":` in a line of our own writing, or npos.
size_t value_at(const std::string& line, const char* key) {
  const std::string k = std::string("\"") + key + "\":";
  const size_t at = line.find(k);
  return at == std::string::npos ? at : at + k.size();
}

}  // namespace

std::string StimulusEvent::describe() const {
  std::string s;
  switch (kind) {
    case mmio: s = std::string(write ? "an MMIO write" : "an MMIO read"); break;
    case dma_read: s = "a DMA read"; break;
    case dma_write: s = "a DMA write"; break;
    case msix: return "MSI-X data " + std::to_string(msi_data);
    case fault: return "a fault on QP " + std::to_string(qp) + " request " + std::to_string(nth);
    case force_msix: return "a forced MSI-X on vector " + std::to_string(msi_data);
  }
  s += " of " + std::to_string(len) + " bytes at 0x";
  append_number(s, addr, 16);
  if (!ok) s += " (refused)";
  if (!data.empty()) {
    s += ": ";
    append_hex(s, data.data(), data.size());
  }
  return s;
}

StimulusRecorder::StimulusRecorder(sc_core::sc_module_name name, const std::string& path)
    : sc_module(name), mmio_in("mmio_in"), mmio_out("mmio_out"), memory_in("memory_in"), memory_out("memory_out"),
      path_(path) {
  out_ = std::fopen(path.c_str(), "w");
  if (!out_) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
  std::setvbuf(out_, nullptr, _IOFBF, 1 << 20);
  mmio_in.register_b_transport(this, &StimulusRecorder::mmio_b_transport);
  memory_in.register_b_transport(this, &StimulusRecorder::memory_b_transport);
  memory_out.register_invalidate_direct_mem_ptr(this, &StimulusRecorder::invalidate);
}

StimulusRecorder::~StimulusRecorder() {
  try {
    close();
  } catch (const std::runtime_error&) {  // a run that failed already: its recording is moot
  }
}

void StimulusRecorder::close() {
  if (!out_) return;
  const bool failed = std::ferror(out_) != 0;
  const bool closed = std::fclose(out_) == 0;
  out_ = nullptr;
  // A recording cut short by a full disk must not pass for a whole one.
  if (failed || !closed) throw std::runtime_error("writing " + path_ + " failed: the recording is incomplete");
}

void StimulusRecorder::put(const StimulusEvent& ev) {
  if (!out_) return;
  std::string& l = line_;
  l.clear();
  switch (ev.kind) {
    case StimulusEvent::mmio:
      l += "{\"ev\":\"mmio\",\"t_ps\":";
      append_number(l, ev.t_ps);
      l += ev.write ? ",\"cmd\":\"write\"" : ",\"cmd\":\"read\"";
      break;
    case StimulusEvent::dma_read: l += "{\"ev\":\"dma_read\""; break;
    case StimulusEvent::dma_write: l += "{\"ev\":\"dma_write\""; break;
    case StimulusEvent::msix:
      l += "{\"ev\":\"msix\",\"data\":";
      append_number(l, ev.msi_data);
      l += "}\n";
      std::fwrite(l.data(), 1, l.size(), out_);
      return;
    case StimulusEvent::fault:
    case StimulusEvent::force_msix:
      l += ev.kind == StimulusEvent::fault ? "{\"ev\":\"fault\",\"t_ps\":" : "{\"ev\":\"force_msix\",\"t_ps\":";
      append_number(l, ev.t_ps);
      if (ev.kind == StimulusEvent::fault) {
        l += ",\"qp\":";
        append_number(l, ev.qp);
        l += ",\"nth\":";
        append_number(l, ev.nth);
        l += ",\"code\":";
        append_number(l, ev.code);
      } else {
        l += ",\"vector\":";
        append_number(l, ev.msi_data);
      }
      l += "}\n";
      std::fwrite(l.data(), 1, l.size(), out_);
      return;
  }
  l += ",\"addr\":\"0x";
  append_number(l, ev.addr, 16);
  l += "\",\"len\":";
  append_number(l, ev.len);
  l += ev.ok ? ",\"ok\":true" : ",\"ok\":false";
  if (!ev.data.empty()) {
    l += ",\"data\":\"";
    append_hex(l, ev.data.data(), ev.data.size());
    l += '"';
  }
  l += "}\n";
  std::fwrite(l.data(), 1, l.size(), out_);
}

void StimulusRecorder::mmio_b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  StimulusEvent ev;
  ev.kind = StimulusEvent::mmio;
  ev.t_ps = (sc_core::sc_time_stamp() + delay).value();
  ev.write = trans.is_write();
  ev.addr = trans.get_address();
  ev.len = trans.get_data_length();
  if (ev.write) ev.data.assign(trans.get_data_ptr(), trans.get_data_ptr() + ev.len);
  mmio_out->b_transport(trans, delay);
  // The device's answer is an output too: whether it took the access, what a read returned.
  ev.ok = trans.is_response_ok();
  if (!ev.write && ev.ok) ev.data.assign(trans.get_data_ptr(), trans.get_data_ptr() + ev.len);
  put(ev);
}

void StimulusRecorder::memory_b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  StimulusEvent ev;
  ev.kind = trans.is_write() ? StimulusEvent::dma_write : StimulusEvent::dma_read;
  ev.addr = trans.get_address();
  ev.len = trans.get_data_length();
  if (trans.is_write()) ev.data.assign(trans.get_data_ptr(), trans.get_data_ptr() + ev.len);
  memory_out->b_transport(trans, delay);
  trans.set_dmi_allowed(false);  // every access is recorded
  ev.ok = trans.is_response_ok();
  if (trans.is_read() && ev.ok) ev.data.assign(trans.get_data_ptr(), trans.get_data_ptr() + ev.len);
  put(ev);
}

void StimulusRecorder::msix(uint32_t data) {
  StimulusEvent ev;
  ev.kind = StimulusEvent::msix;
  ev.msi_data = data;
  put(ev);
}

void StimulusRecorder::fault(uint32_t qp, uint64_t nth, uint16_t code) {
  StimulusEvent ev;
  ev.kind = StimulusEvent::fault;
  ev.t_ps = sc_core::sc_time_stamp().value();
  ev.qp = qp;
  ev.nth = nth;
  ev.code = code;
  put(ev);
}

void StimulusRecorder::force_msix(unsigned vector) {
  StimulusEvent ev;
  ev.kind = StimulusEvent::force_msix;
  ev.t_ps = sc_core::sc_time_stamp().value();
  ev.msi_data = vector;
  put(ev);
}

StimulusReader::StimulusReader(const std::string& path) : path_(path) {
  in_ = std::fopen(path.c_str(), "r");
  if (!in_) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
}

StimulusReader::~StimulusReader() {
  if (in_) std::fclose(in_);
}

StimulusEvent StimulusReader::parse(const std::string& line) const {
  const auto bad = [&](const std::string& what) {
    return std::runtime_error(path_ + " line " + std::to_string(line_no_) + ": " + what);
  };
  const auto number = [&](const char* key, int base, uint64_t& v) {
    size_t at = value_at(line, key);
    if (at == std::string::npos) throw bad(std::string("no \"") + key + "\"");
    if (base == 16) {
      if (line.compare(at, 3, "\"0x") != 0) throw bad(std::string("\"") + key + "\" is not a \"0x...\" address");
      at += 3;
    }
    const auto r = std::from_chars(line.data() + at, line.data() + line.size(), v, base);
    if (r.ec != std::errc() || r.ptr == line.data() + at) throw bad(std::string("\"") + key + "\" is not a number");
  };
  StimulusEvent ev;
  ev.line = line_no_;
  const size_t kind_at = value_at(line, "ev");
  if (kind_at == std::string::npos) throw bad("no \"ev\"");
  const std::string kind = line.substr(kind_at, line.find('"', kind_at + 1) - kind_at + 1);
  uint64_t v = 0;
  const auto u32 = [&](const char* key) {
    uint64_t x = 0;
    number(key, 10, x);
    if (x > UINT32_MAX) throw bad(std::string("\"") + key + "\" is out of range");
    return uint32_t(x);
  };
  if (kind == "\"msix\"" || kind == "\"force_msix\"") {
    ev.kind = kind == "\"msix\"" ? StimulusEvent::msix : StimulusEvent::force_msix;
    if (ev.kind == StimulusEvent::force_msix) number("t_ps", 10, ev.t_ps);
    ev.msi_data = u32(ev.kind == StimulusEvent::msix ? "data" : "vector");
    return ev;
  }
  if (kind == "\"fault\"") {
    ev.kind = StimulusEvent::fault;
    number("t_ps", 10, ev.t_ps);
    ev.qp = u32("qp");
    number("nth", 10, ev.nth);
    ev.code = uint16_t(u32("code"));
    return ev;
  }
  if (kind == "\"mmio\"") {
    ev.kind = StimulusEvent::mmio;
    number("t_ps", 10, ev.t_ps);
    const size_t cmd = value_at(line, "cmd");
    if (cmd == std::string::npos) throw bad("no \"cmd\"");
    ev.write = line.compare(cmd, 7, "\"write\"") == 0;
    if (!ev.write && line.compare(cmd, 6, "\"read\"") != 0) throw bad("\"cmd\" is neither \"write\" nor \"read\"");
  } else if (kind == "\"dma_read\"" || kind == "\"dma_write\"") {
    ev.kind = kind == "\"dma_read\"" ? StimulusEvent::dma_read : StimulusEvent::dma_write;
  } else {
    throw bad("unknown \"ev\" " + kind);
  }
  ev.ok = line.find("\"ok\":true") != std::string::npos;
  if (!ev.ok && line.find("\"ok\":false") == std::string::npos) {
    if (ev.kind != StimulusEvent::mmio) throw bad("no \"ok\"");
    ev.answered = false;  // an older recording's host access: re-driven, its answer not compared
  }
  number("addr", 16, ev.addr);
  number("len", 10, v);
  if (v == 0 || v > (1u << 24)) throw bad("\"len\" " + std::to_string(v) + " is out of range");
  ev.len = uint32_t(v);
  const bool carries = ev.write || ev.kind == StimulusEvent::dma_write || (!ev.write && ev.ok && ev.answered);
  if (!carries) return ev;
  size_t at = value_at(line, "data");
  if (at == std::string::npos || line[at] != '"') throw bad("no \"data\"");
  at++;
  ev.data.resize(ev.len);
  for (uint32_t i = 0; i < ev.len; i++) {
    const char* hi = std::strchr(kHexDigits, at + 2 * i < line.size() ? line[at + 2 * i] : 'x');
    const char* lo = std::strchr(kHexDigits, at + 2 * i + 1 < line.size() ? line[at + 2 * i + 1] : 'x');
    if (!hi || !lo || !*hi || !*lo) throw bad("\"data\" is not " + std::to_string(ev.len) + " bytes of lowercase hex");
    ev.data[i] = uint8_t((hi - kHexDigits) << 4 | (lo - kHexDigits));
  }
  if (line[at + 2 * ev.len] != '"') throw bad("\"data\" is longer than \"len\"");
  return ev;
}

bool StimulusReader::read_one() {
  std::string line;
  while (line.empty()) {
    if (cut_at_line_) return false;
    char* buf = nullptr;
    size_t cap = 0;
    const ssize_t n = ::getline(&buf, &cap, in_);
    const bool whole = n > 0 && buf[n - 1] == '\n';
    if (n > 0) line.assign(buf, size_t(n) - whole);
    std::free(buf);
    if (n < 0) return false;
    line_no_++;
    // A last line without its newline is where a killed run stopped writing: the recording
    // ends before it.
    if (!whole) {
      cut_at_line_ = line_no_;
      return false;
    }
  }
  StimulusEvent ev = parse(line);
  (ev.host() ? mmio_ : device_).push_back(std::move(ev));
  return true;
}

bool StimulusReader::next_mmio(StimulusEvent& ev) {
  while (mmio_.empty())
    if (!read_one()) return false;
  ev = std::move(mmio_.front());
  mmio_.pop_front();
  return true;
}

bool StimulusReader::next_device(StimulusEvent& ev) {
  while (device_.empty())
    if (!read_one()) return false;
  ev = std::move(device_.front());
  device_.pop_front();
  return true;
}

}  // namespace irdma_sim::system
