#include "model/trace/trace_log.h"

#include <algorithm>
#include <cerrno>
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

// A name or key a reader takes: short, plain text.
void check_name(const char* text) {
  const size_t n = std::strlen(text);
  if (n > format::kMaxNameBytes || !format::plain_text(reinterpret_cast<const uint8_t*>(text), n))
    throw std::logic_error(std::string("trace event name or key '") + text + "': not a short plain identifier");
}

}  // namespace

TraceLog::~TraceLog() {
  try {
    close();
  } catch (const std::runtime_error&) {  // an owner that wanted to hear of it closed it first
  }
}

TraceLog::Format TraceLog::format_for(const std::string& path) {
  const std::string suffix = ".jsonl";
  const bool jsonl = path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  return jsonl ? Format::jsonl : Format::binary;
}

void TraceLog::open(const std::string& path, std::function<uint64_t()> horizon, Format format) {
  close();
  out_ = std::fopen(path.c_str(), "w");
  if (!out_) throw std::runtime_error("cannot open trace file " + path + ": " + std::strerror(errno));
  std::setvbuf(out_, nullptr, _IONBF, 0);  // out_buf_ is the buffer
  path_ = path;
  write_error_ = 0;
  format_ = format;
  horizon_ = std::move(horizon);
  shapes_.clear();
  std::fill(std::begin(last_shape_), std::end(last_shape_), 0);
  schemas_written_ = 0;
  shape_slots_.assign(256, 0);
  out_buf_.size = 0;
  if (format_ == Format::binary) {  // on disk at once: a run killed early leaves a trace of nothing, not no trace
    out_buf_.append(format::header());
    drain_out();
  }
  pending_.clear();
  sorted_ = 0;
  held_.size = 0;
  held_live_ = 0;
  last_written_ps_ = 0;
  written_before_ = 0;
}

void TraceLog::Event::add_field(const char* key, format::Kind kind) {
  if (fields_ == kMaxFields) {
    log_ = nullptr;  // nothing half-built is stored
    throw std::logic_error(std::string("trace event ") + ev_ + " has more than " + std::to_string(kMaxFields) + " fields");
  }
  keys_[fields_] = key;
  kinds_[fields_++] = kind;
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

void TraceLog::Event::put_number_spilling(const char* key, format::Kind kind, uint64_t value) {
  add_field(key, kind);
  uint8_t* p = reserve(format::kMaxVarintBytes);
  size_ -= format::kMaxVarintBytes - size_t(format::put_varint(p, value) - p);
}

void TraceLog::Event::put_bytes(const char* key, format::Kind kind, const void* bytes, size_t len) {
  if (len > format::kMaxValueBytes) {
    log_ = nullptr;
    throw std::logic_error(std::string("trace event ") + ev_ + ": a value of " + std::to_string(len) + " bytes");
  }
  put_number_spilling(key, kind, len);
  std::memcpy(reserve(len), bytes, len);
}

TraceLog::Event& TraceLog::Event::str(const char* key, const char* value) {
  if (!log_) return *this;
  const size_t n = std::strlen(value);
  if (!format::plain_text(reinterpret_cast<const uint8_t*>(value), n)) {
    log_ = nullptr;
    throw std::logic_error(std::string("trace event ") + ev_ + ": " + key + " is not plain text");
  }
  put_bytes(key, format::Kind::str, value, n);
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

// The event's shape: its name's and keys' addresses and its kinds. The shape last seen
// with its name is tried first: an event site logs one shape, or nearly.
uint32_t TraceLog::shape_of(const Event& e) {
  const auto same = [&](const Shape& s) {
    if (s.ev != e.ev_ || s.keys.size() != e.fields_) return false;
    for (size_t i = 0; i < e.fields_; i++)
      if (s.keys[i] != e.keys_[i] || s.kinds[i] != e.kinds_[i]) return false;
    return true;
  };
  uint32_t& last = last_shape_[(reinterpret_cast<uintptr_t>(e.ev_) >> 3) % std::size(last_shape_)];
  if (last && same(shapes_[last - 1])) return last - 1;
  uint64_t hash = mix(0, reinterpret_cast<uintptr_t>(e.ev_));
  for (size_t i = 0; i < e.fields_; i++) hash = mix(hash, reinterpret_cast<uintptr_t>(e.keys_[i]) ^ uint64_t(e.kinds_[i]));
  const size_t mask = shape_slots_.size() - 1;
  size_t slot = hash & mask;
  for (;; slot = (slot + 1) & mask) {
    const uint32_t at = shape_slots_[slot];
    if (at == 0) break;
    if (shapes_[at - 1].hash == hash && same(shapes_[at - 1])) {
      last = at;
      return at - 1;
    }
  }
  check_name(e.ev_);
  for (size_t i = 0; i < e.fields_; i++) check_name(e.keys_[i]);
  Shape s{hash, e.ev_, {e.keys_, e.keys_ + e.fields_}, {e.kinds_, e.kinds_ + e.fields_}, {e.ev_, {}}};
  for (size_t i = 0; i < e.fields_; i++) s.schema.fields.emplace_back(e.keys_[i], e.kinds_[i]);
  shapes_.push_back(std::move(s));
  shape_slots_[slot] = uint32_t(shapes_.size());
  last = uint32_t(shapes_.size());
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
  pending_.push_back({t_ps, shape, uint32_t(size), held_.size});
  held_.append(values, size);
  held_live_ += size;
  if (pending_.size() - sorted_ == kLookEvery) flush();
}

void TraceLog::write(uint64_t t_ps, uint32_t shape, const uint8_t* values, size_t size) {
  Shape& s = shapes_[shape];
  if (format_ == Format::jsonl) {
    const uint8_t* p = values;
    scratch_.clear();
    format::render_json(scratch_, t_ps, s.schema, p, values + size);
    scratch_ += '\n';
    out_buf_.append(scratch_);
  } else {
    if (!s.number) {
      scratch_.clear();
      format::put_varint(scratch_, format::kSchemaRecord);
      format::put_varint(scratch_, s.schema.ev.size());
      scratch_ += s.schema.ev;
      format::put_varint(scratch_, s.schema.fields.size());
      for (const auto& [key, kind] : s.schema.fields) {
        scratch_ += char(kind);
        format::put_varint(scratch_, key.size());
        scratch_ += key;
      }
      out_buf_.append(scratch_);
      s.number = ++schemas_written_;
    }
    uint8_t head[2 * format::kMaxVarintBytes];  // the tag and the time's difference
    const uint8_t* end = format::put_varint(format::put_varint(head, format::kFirstEventTag - 1 + s.number),
                                            format::zigzag(int64_t(t_ps - last_written_ps_)));
    out_buf_.append(head, size_t(end - head));
    out_buf_.append(values, size);
  }
  last_written_ps_ = t_ps;
  written_++;
  if (out_buf_.size >= kWriteBuffer) drain_out();
}

void TraceLog::drain_out() {
  if (std::fwrite(out_buf_.data.get(), 1, out_buf_.size, out_) != out_buf_.size && !write_error_) write_error_ = errno;
  out_buf_.size = 0;
}

void TraceLog::write_before(uint64_t t_ps) {
  // The events logged since the last look come mostly in time order: those that do stay
  // where they are, the rest (logged late) are sorted apart and merged in, and then all of
  // them into those held from before. A merge takes the earlier range first at equal times
  // and the sort is stable, so events of one time keep the order they were logged in (a
  // late event's time is below that of every in-order event logged after it).
  const auto by_time = [](const Entry& a, const Entry& b) { return a.t_ps < b.t_ps; };
  const auto fresh = pending_.begin() + sorted_;
  auto in_order = fresh;
  out_of_order_.clear();
  for (auto it = fresh; it != pending_.end(); ++it) {
    if (in_order != fresh && it->t_ps < in_order[-1].t_ps)
      out_of_order_.push_back(*it);
    else
      *in_order++ = *it;
  }
  if (!out_of_order_.empty()) {
    std::stable_sort(out_of_order_.begin(), out_of_order_.end(), by_time);
    merged_.resize(size_t(pending_.end() - fresh));
    std::merge(fresh, in_order, out_of_order_.begin(), out_of_order_.end(), merged_.begin(), by_time);
    std::copy(merged_.begin(), merged_.end(), fresh);
  }
  if (sorted_ && fresh != pending_.end() && by_time(*fresh, fresh[-1]))
    std::inplace_merge(pending_.begin(), fresh, pending_.end(), by_time);
  size_t n = 0;
  for (; n < pending_.size() && (pending_[n].t_ps < t_ps || t_ps == UINT64_MAX); n++) {
    const Entry& e = pending_[n];
    write(e.t_ps, e.shape, reinterpret_cast<const uint8_t*>(held_.data.get()) + e.offset, e.size);
    held_live_ -= e.size;
  }
  pending_.erase(pending_.begin(), pending_.begin() + n);
  sorted_ = pending_.size();
  written_before_ = std::max(written_before_, t_ps);
  if (pending_.empty())
    held_.size = 0;
  else if (held_.size > kCompactHeld && held_.size > 2 * held_live_)
    compact_held();
}

// The held events' values, moved to the front: what written events left behind goes.
void TraceLog::compact_held() {
  Bytes kept;
  kept.grow(held_.capacity);
  for (Entry& e : pending_) {
    const size_t at = kept.size;
    kept.append(held_.data.get() + e.offset, e.size);
    e.offset = at;
  }
  held_ = std::move(kept);
}

void TraceLog::Bytes::grow(size_t at_least) {
  const size_t to = std::max({at_least, 2 * capacity, size_t(4096)});
  std::unique_ptr<char[]> more(new char[to]);
  if (size) std::memcpy(more.get(), data.get(), size);
  data = std::move(more);
  capacity = to;
}

void TraceLog::flush() {
  if (out_) write_before(horizon_());
}

void TraceLog::close() {
  if (!out_) return;
  write_before(UINT64_MAX);
  if (format_ == Format::binary) {
    const char end = char(format::kEndRecord);
    out_buf_.append(&end, 1);
  }
  drain_out();
  if (std::fclose(out_) != 0 && !write_error_) write_error_ = errno;
  out_ = nullptr;
  if (write_error_)
    throw std::runtime_error("writing the trace " + path_ + " failed: " + std::strerror(write_error_));
}

}  // namespace irdma_sim::trace
