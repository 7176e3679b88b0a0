#include "model/trace/trace_log.h"

#include <algorithm>
#include <cinttypes>
#include <stdexcept>

namespace irdma_sim::trace {

TraceLog::~TraceLog() { close(); }

namespace {

// Events held before the window is looked at again: a bound on its size between looks,
// and few enough looks that they cost nothing beside the events.
constexpr size_t kLookEvery = 4096;

}  // namespace

void TraceLog::open(const std::string& path, std::function<uint64_t()> horizon) {
  close();
  out_ = std::fopen(path.c_str(), "w");
  if (!out_) throw std::runtime_error("cannot open trace file " + path);
  horizon_ = std::move(horizon);
  written_before_ = 0;
}

void TraceLog::Event::begin(const char* ev) {
  json_.reserve(160);
  json_ += "{\"t_ps\":";
  json_ += std::to_string(t_ps_);
  json_ += ",\"ev\":\"";
  json_ += ev;
  json_ += '"';
}

void TraceLog::Event::commit() {
  json_ += '}';
  TraceLog& log = *log_;
  if (t_ps_ < log.written_before_) {
    log.late_++;
    log.write(json_);
    return;
  }
  log.pending_.push({t_ps_, log.seq_++, std::move(json_)});
  if (log.pending_.size() % kLookEvery == 0) log.flush();
}

void TraceLog::Event::put_num(const char* key, uint64_t value) {
  json_ += ",\"";
  json_ += key;
  json_ += "\":";
  json_ += std::to_string(value);
}

void TraceLog::Event::put_addr(const char* key, uint64_t value) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, value);
  put_str(key, buf);
}

void TraceLog::Event::put_str(const char* key, const char* value) {
  json_ += ",\"";
  json_ += key;
  json_ += "\":\"";
  json_ += value;  // callers pass identifiers and hex, never text needing escapes
  json_ += '"';
}

void TraceLog::Event::put_hex(const char* key, const void* bytes, size_t len) {
  static const char digits[] = "0123456789abcdef";
  std::string h(2 * len, '0');
  const auto* p = static_cast<const uint8_t*>(bytes);
  for (size_t i = 0; i < len; i++) {
    h[2 * i] = digits[p[i] >> 4];
    h[2 * i + 1] = digits[p[i] & 15];
  }
  put_str(key, h.c_str());
}

void TraceLog::write(const std::string& json) {
  std::fputs(json.c_str(), out_);
  std::fputc('\n', out_);
  written_++;
}

void TraceLog::write_before(uint64_t t_ps) {
  while (!pending_.empty() && pending_.top().t_ps < t_ps) {
    write(pending_.top().json);
    pending_.pop();
  }
  written_before_ = std::max(written_before_, t_ps);
}

void TraceLog::flush() {
  if (out_) write_before(horizon_());
}

void TraceLog::close() {
  if (!out_) return;
  write_before(UINT64_MAX);
  std::fclose(out_);
  out_ = nullptr;
}

}  // namespace irdma_sim::trace
