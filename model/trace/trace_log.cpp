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

TraceLog::Event::Event(TraceLog* log, uint64_t t_ps, const char* ev) : log_(log), t_ps_(t_ps) {
  if (!log_->enabled()) return;
  json_.reserve(160);
  json_ += "{\"t_ps\":";
  json_ += std::to_string(t_ps);
  json_ += ",\"ev\":\"";
  json_ += ev;
  json_ += '"';
}

TraceLog::Event::~Event() {
  if (!log_->enabled()) return;
  json_ += '}';
  log_->pending_.push_back({t_ps_, log_->seq_++, std::move(json_)});
}

TraceLog::Event& TraceLog::Event::num(const char* key, uint64_t value) {
  if (log_->enabled()) {
    json_ += ",\"";
    json_ += key;
    json_ += "\":";
    json_ += std::to_string(value);
  }
  return *this;
}

TraceLog::Event& TraceLog::Event::addr(const char* key, uint64_t value) {
  if (log_->enabled()) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%" PRIx64, value);
    str(key, buf);
  }
  return *this;
}

TraceLog::Event& TraceLog::Event::str(const char* key, const std::string& value) {
  if (log_->enabled()) {
    json_ += ",\"";
    json_ += key;
    json_ += "\":\"";
    json_ += value;  // callers pass identifiers and hex, never text needing escapes
    json_ += '"';
  }
  return *this;
}

TraceLog::Event& TraceLog::Event::hex(const char* key, const void* bytes, size_t len) {
  if (log_->enabled()) {
    static const char digits[] = "0123456789abcdef";
    std::string h(2 * len, '0');
    const auto* p = static_cast<const uint8_t*>(bytes);
    for (size_t i = 0; i < len; i++) {
      h[2 * i] = digits[p[i] >> 4];
      h[2 * i + 1] = digits[p[i] & 15];
    }
    str(key, h);
  }
  return *this;
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
