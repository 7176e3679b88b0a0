#include "model/trace/trace_log.h"

#include <algorithm>
#include <cinttypes>
#include <stdexcept>

namespace irdma_sim::trace {

TraceLog::~TraceLog() { close(); }

void TraceLog::open(const std::string& path) {
  close();
  out_ = std::fopen(path.c_str(), "w");
  if (!out_) throw std::runtime_error("cannot open trace file " + path);
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
  log_->pending_.push_back({t_ps_, log_->seq_++, std::move(json_)});
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

void TraceLog::write_sorted(size_t count) {
  for (size_t i = 0; i < count; i++) {
    std::fputs(pending_[i].json.c_str(), out_);
    std::fputc('\n', out_);
  }
  written_ += count;
  pending_.erase(pending_.begin(), pending_.begin() + ptrdiff_t(count));
}

void TraceLog::flush_before(uint64_t t_ps) {
  if (!out_ || pending_.empty()) return;
  const auto by_time = [](const Entry& a, const Entry& b) {
    return a.t_ps != b.t_ps ? a.t_ps < b.t_ps : a.seq < b.seq;
  };
  std::sort(pending_.begin(), pending_.end(), by_time);
  const auto cut = std::lower_bound(pending_.begin(), pending_.end(), t_ps,
                                    [](const Entry& e, uint64_t t) { return e.t_ps < t; });
  write_sorted(size_t(cut - pending_.begin()));
}

void TraceLog::close() {
  if (!out_) return;
  flush_before(UINT64_MAX);
  std::fclose(out_);
  out_ = nullptr;
}

}  // namespace irdma_sim::trace
