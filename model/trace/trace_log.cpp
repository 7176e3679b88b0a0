#include "model/trace/trace_log.h"

#include "model/trace/text.h"

#include <algorithm>
#include <stdexcept>

namespace irdma_sim::trace {

TraceLog::~TraceLog() { close(); }

namespace {

// Events held before the window is looked at again: a bound on its size between looks,
// and few enough looks that they cost nothing beside the events.
constexpr size_t kLookEvery = 4096;
constexpr size_t kWriteBuffer = 1 << 20;

}  // namespace

void TraceLog::open(const std::string& path, std::function<uint64_t()> horizon) {
  close();
  out_ = std::fopen(path.c_str(), "w");
  if (!out_) throw std::runtime_error("cannot open trace file " + path);
  std::setvbuf(out_, nullptr, _IOFBF, kWriteBuffer);  // a write(2) per MiB, not per 4 KiB
  horizon_ = std::move(horizon);
  written_before_ = 0;
}

void TraceLog::Event::begin(const char* ev) {
  json_.reserve(160);
  json_ += "{\"t_ps\":";
  append_number(json_, t_ps_, 10);
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
  if (log.pending_.empty() || log.pending_.back().t_ps <= t_ps_) {
    log.pending_.push_back({t_ps_, std::move(json_)});
  } else {  // after every event of its time or earlier
    const auto at = std::upper_bound(log.pending_.begin(), log.pending_.end(), t_ps_,
                                     [](uint64_t t, const Entry& e) { return t < e.t_ps; });
    log.pending_.insert(at, {t_ps_, std::move(json_)});
  }
  if (log.pending_.size() % kLookEvery == 0) log.flush();
}

void TraceLog::Event::put_num(const char* key, uint64_t value) {
  json_ += ",\"";
  json_ += key;
  json_ += "\":";
  append_number(json_, value, 10);
}

void TraceLog::Event::put_addr(const char* key, uint64_t value) {
  json_ += ",\"";
  json_ += key;
  json_ += "\":\"0x";
  append_number(json_, value, 16);
  json_ += '"';
}

void TraceLog::Event::put_str(const char* key, const char* value) {
  json_ += ",\"";
  json_ += key;
  json_ += "\":\"";
  json_ += value;  // callers pass identifiers and hex, never text needing escapes
  json_ += '"';
}

void TraceLog::Event::put_hex(const char* key, const void* bytes, size_t len) {
  json_ += ",\"";
  json_ += key;
  json_ += "\":\"";
  append_hex(json_, bytes, len);
  json_ += '"';
}

void TraceLog::write(std::string& json) {
  json += '\n';
  std::fwrite(json.data(), 1, json.size(), out_);
  written_++;
}

void TraceLog::write_before(uint64_t t_ps) {
  while (!pending_.empty() && pending_.front().t_ps < t_ps) {
    write(pending_.front().json);
    pending_.pop_front();
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
