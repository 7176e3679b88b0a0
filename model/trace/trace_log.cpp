#include "model/trace/trace_log.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace irdma_sim::trace {

namespace {

// Events held before the window is looked at again: a bound on its size between looks,
// and few enough looks that they cost nothing beside the events.
constexpr size_t kLookEvery = 4096;
constexpr size_t kWriteBuffer = 1 << 20;  // a write(2) per MiB
// Held bytes past which those of written events are dropped, once they are most of them.
constexpr size_t kCompactHeld = 1 << 20;

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccd;
}

}  // namespace

TraceLog::~TraceLog() { close(); }

TraceLog::Format TraceLog::format_for(const std::string& path) {
  const std::string suffix = ".jsonl";
  const bool jsonl = path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  return jsonl ? Format::jsonl : Format::binary;
}

void TraceLog::open(const std::string& path, std::function<uint64_t()> horizon, Format format) {
  close();
  out_ = std::fopen(path.c_str(), "w");
  if (!out_) throw std::runtime_error("cannot open trace file " + path);
  format_ = format;
  horizon_ = std::move(horizon);
  shapes_.clear();
  schemas_written_ = 0;
  shape_slots_.assign(256, 0);
  out_buf_.clear();
  out_buf_.reserve(kWriteBuffer + 4096);
  if (format_ == Format::binary) out_buf_ = format::header();
  last_written_ps_ = 0;
  written_before_ = 0;
}

void TraceLog::Event::begin(uint64_t t_ps, const char* ev) {
  t_ps_ = t_ps;
  ev_ = ev;
  shape_ = mix(0, reinterpret_cast<uintptr_t>(ev));
  fields_ = 0;
  size_ = 0;
}

void TraceLog::Event::add_field(const char* key, format::Kind kind) {
  if (fields_ == kMaxFields) {
    log_ = nullptr;  // nothing half-built is stored
    throw std::logic_error(std::string("trace event ") + ev_ + " has more than " + std::to_string(kMaxFields) + " fields");
  }
  keys_[fields_] = key;
  kinds_[fields_++] = kind;
  shape_ = mix(shape_, reinterpret_cast<uintptr_t>(key) ^ uint64_t(kind));
}

uint8_t* TraceLog::Event::reserve(size_t n) {
  if (spill_.empty() && size_ + n <= kInlineBytes) {
    uint8_t* at = inline_ + size_;
    size_ += n;
    return at;
  }
  if (spill_.empty()) spill_.assign(reinterpret_cast<const char*>(inline_), size_);
  spill_.resize(size_ + n);
  uint8_t* at = reinterpret_cast<uint8_t*>(spill_.data()) + size_;
  size_ += n;
  return at;
}

void TraceLog::Event::put_number(const char* key, format::Kind kind, uint64_t value) {
  add_field(key, kind);
  uint8_t* p = reserve(10);  // the longest varint of 64 bits
  size_t n = 0;
  while (value >= 0x80) {
    p[n++] = uint8_t(value) | 0x80;
    value >>= 7;
  }
  p[n++] = uint8_t(value);
  size_ -= 10 - n;
}

void TraceLog::Event::put_bytes(const char* key, format::Kind kind, const void* bytes, size_t len) {
  if (len > format::kMaxValueBytes) {
    log_ = nullptr;
    throw std::logic_error(std::string("trace event ") + ev_ + ": a value of " + std::to_string(len) + " bytes");
  }
  put_number(key, kind, len);
  std::memcpy(reserve(len), bytes, len);
}

TraceLog::Event& TraceLog::Event::str(const char* key, const char* value) {
  if (log_) put_bytes(key, format::Kind::str, value, std::strlen(value));
  return *this;
}

void TraceLog::Event::commit() {
  TraceLog& log = *log_;
  const uint32_t shape = log.shape_of(*this);
  const uint8_t* values = spill_.empty() ? inline_ : reinterpret_cast<const uint8_t*>(spill_.data());
  if (t_ps_ < log.written_before_) {
    log.late_++;
    log.write(t_ps_, shape, values, size_);
    return;
  }
  log.hold(t_ps_, shape, values, size_);
}

uint32_t TraceLog::shape_of(const Event& e) {
  const size_t mask = shape_slots_.size() - 1;
  size_t slot = e.shape_ & mask;
  for (;; slot = (slot + 1) & mask) {
    const uint32_t at = shape_slots_[slot];
    if (at == 0) break;
    const Shape& s = shapes_[at - 1];
    if (s.hash == e.shape_ && s.ev == e.ev_ && s.keys.size() == e.fields_ &&
        std::equal(s.keys.begin(), s.keys.end(), e.keys_) && std::equal(s.kinds.begin(), s.kinds.end(), e.kinds_))
      return at - 1;
  }
  Shape s{e.shape_, e.ev_, {e.keys_, e.keys_ + e.fields_}, {e.kinds_, e.kinds_ + e.fields_}, {e.ev_, {}}};
  for (size_t i = 0; i < e.fields_; i++) s.schema.fields.emplace_back(e.keys_[i], e.kinds_[i]);
  shapes_.push_back(std::move(s));
  shape_slots_[slot] = uint32_t(shapes_.size());
  if (shapes_.size() * 2 > shape_slots_.size()) {  // keep probes short: rehash at half full
    shape_slots_.assign(shape_slots_.size() * 2, 0);
    for (size_t i = 0; i < shapes_.size(); i++) {
      size_t at = shapes_[i].hash & (shape_slots_.size() - 1);
      while (shape_slots_[at]) at = (at + 1) & (shape_slots_.size() - 1);
      shape_slots_[at] = uint32_t(i + 1);
    }
  }
  return uint32_t(shapes_.size() - 1);
}

void TraceLog::hold(uint64_t t_ps, uint32_t shape, const uint8_t* values, size_t size) {
  const Entry e{t_ps, shape, uint32_t(size), held_.size()};
  held_.append(reinterpret_cast<const char*>(values), size);
  held_live_ += size;
  if (pending_.empty() || pending_.back().t_ps <= t_ps) {
    pending_.push_back(e);
  } else {  // after every event of its time or earlier
    const auto at = std::upper_bound(pending_.begin(), pending_.end(), t_ps,
                                     [](uint64_t t, const Entry& x) { return t < x.t_ps; });
    pending_.insert(at, e);
  }
  if (pending_.size() % kLookEvery == 0) flush();
}

void TraceLog::write(uint64_t t_ps, uint32_t shape, const uint8_t* values, size_t size) {
  Shape& s = shapes_[shape];
  if (format_ == Format::jsonl) {
    const uint8_t* p = values;
    format::render_json(out_buf_, t_ps, s.schema, p, values + size);
    out_buf_ += '\n';
  } else {
    if (!s.number) {
      format::put_varint(out_buf_, format::kSchemaRecord);
      format::put_varint(out_buf_, s.schema.ev.size());
      out_buf_ += s.schema.ev;
      format::put_varint(out_buf_, s.schema.fields.size());
      for (const auto& [key, kind] : s.schema.fields) {
        out_buf_ += char(kind);
        format::put_varint(out_buf_, key.size());
        out_buf_ += key;
      }
      s.number = ++schemas_written_;
    }
    format::put_varint(out_buf_, s.number);
    format::put_varint(out_buf_, format::zigzag(int64_t(t_ps - last_written_ps_)));
    out_buf_.append(reinterpret_cast<const char*>(values), size);
  }
  last_written_ps_ = t_ps;
  written_++;
  if (out_buf_.size() >= kWriteBuffer) drain_out();
}

void TraceLog::drain_out() {
  std::fwrite(out_buf_.data(), 1, out_buf_.size(), out_);
  out_buf_.clear();
}

void TraceLog::write_before(uint64_t t_ps) {
  while (!pending_.empty() && (pending_.front().t_ps < t_ps || t_ps == UINT64_MAX)) {
    const Entry& e = pending_.front();
    write(e.t_ps, e.shape, reinterpret_cast<const uint8_t*>(held_.data()) + e.offset, e.size);
    held_live_ -= e.size;
    pending_.pop_front();
  }
  written_before_ = std::max(written_before_, t_ps);
  if (pending_.empty())
    held_.clear();
  else if (held_.size() > kCompactHeld && held_.size() > 2 * held_live_)
    compact_held();
}

// The held events' values, moved to the front: what written events left behind goes.
void TraceLog::compact_held() {
  std::string kept;
  kept.reserve(std::max(held_.capacity(), size_t(kCompactHeld)));
  for (Entry& e : pending_) {
    const size_t at = kept.size();
    kept.append(held_, e.offset, e.size);
    e.offset = at;
  }
  held_.swap(kept);
}

void TraceLog::flush() {
  if (out_) write_before(horizon_());
}

void TraceLog::close() {
  if (!out_) return;
  write_before(UINT64_MAX);
  drain_out();
  std::fclose(out_);
  out_ = nullptr;
}

}  // namespace irdma_sim::trace
