#include "model/trace/trace_reader.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>

namespace irdma_sim::trace {

using format::Decoded;

namespace {

std::FILE* open_to_read(const std::string& path) {
  std::FILE* in = std::fopen(path.c_str(), "rb");
  if (!in) throw TraceRefused("cannot read " + path + ": " + std::strerror(errno));
  return in;
}

}  // namespace

TraceReader::TraceReader(const std::string& path) : TraceReader(open_to_read(path), path) {}

TraceReader::TraceReader(std::FILE* in, const std::string& path) : path_(path), in_(in), buf_(64 << 10) {
  uint8_t header[format::kHeaderBytes];
  const size_t got = std::fread(header, 1, sizeof header, in_);
  if (got == 0) {
    std::fclose(in_);
    throw TraceRefused(path + " is empty (was the run that wrote it killed before it began?)");
  }
  if (got < sizeof format::kMagic || std::memcmp(header, format::kMagic, sizeof format::kMagic) != 0) {
    std::fclose(in_);
    throw TraceRefused(path + " is not a binary irdma-sim trace (it does not start with IRDMATRC)");
  }
  uint32_t version = 0;
  for (unsigned i = 0; i < 4 && sizeof format::kMagic + i < got; i++)
    version |= uint32_t(header[sizeof format::kMagic + i]) << (8 * i);
  if (got < sizeof header || version != format::kVersion) {
    std::fclose(in_);
    throw TraceRefused(path + " is a binary trace of format version " +
                             (got < sizeof header ? std::string("(cut short)") : std::to_string(version)) +
                             "; this irdma-sim reads version " + std::to_string(format::kVersion));
  }
  buf_offset_ = sizeof header;
}

TraceReader::~TraceReader() {
  if (in_) std::fclose(in_);
}

void TraceReader::fail(const std::string& what) const {
  throw std::runtime_error(path_ + ": " + what + " at byte " + std::to_string(buf_offset_ + pos_) + ", after " +
                           std::to_string(events_) + " events");
}

bool TraceReader::refill() {
  if (eof_) return false;
  if (pos_ > 0) {
    std::memmove(buf_.data(), buf_.data() + pos_, len_ - pos_);
    buf_offset_ += pos_;
    len_ -= pos_;
    pos_ = 0;
  }
  if (len_ == buf_.size()) buf_.resize(buf_.size() * 2);  // one record fills the buffer
  const size_t got = std::fread(buf_.data() + len_, 1, buf_.size() - len_, in_);
  if (got == 0) {
    if (std::ferror(in_)) fail(std::string("read failed: ") + std::strerror(errno));
    eof_ = true;
    return false;
  }
  len_ += got;
  return true;
}

Decoded TraceReader::read_schema(const uint8_t*& p, const uint8_t* end) {
  format::Schema s;
  auto string = [&](std::string& out) {
    uint64_t n;
    if (const Decoded d = format::get_varint(p, end, n); d != Decoded::ok) return d;
    if (n > format::kMaxNameBytes) return Decoded::malformed;
    if (n > uint64_t(end - p)) return Decoded::short_input;
    if (!format::plain_text(p, size_t(n))) return Decoded::malformed;
    out.assign(reinterpret_cast<const char*>(p), size_t(n));
    p += n;
    return Decoded::ok;
  };
  if (const Decoded d = string(s.ev); d != Decoded::ok) return d;
  uint64_t fields;
  if (const Decoded d = format::get_varint(p, end, fields); d != Decoded::ok) return d;
  if (fields > format::kMaxSchemaFields || schemas_.size() == format::kMaxSchemas) return Decoded::malformed;
  for (uint64_t i = 0; i < fields; i++) {
    if (p == end) return Decoded::short_input;
    const uint8_t kind = *p++;
    if (kind >= format::kKinds) return Decoded::malformed;
    std::string key;
    if (const Decoded d = string(key); d != Decoded::ok) return d;
    s.fields.emplace_back(std::move(key), format::Kind(kind));
  }
  schemas_.push_back(std::move(s));
  return Decoded::ok;
}

Decoded TraceReader::read_record(const uint8_t*& p, const uint8_t* end, std::string& line, uint64_t& tag) {
  uint64_t t;
  if (const Decoded d = format::get_varint(p, end, t); d != Decoded::ok) return d;
  tag = t;
  if (tag == format::kEndRecord) return Decoded::ok;
  if (tag == format::kSchemaRecord) return read_schema(p, end);
  const uint64_t schema = tag - format::kFirstEventTag;
  if (schema >= schemas_.size()) return Decoded::malformed;
  uint64_t dt;
  if (const Decoded d = format::get_varint(p, end, dt); d != Decoded::ok) return d;
  const uint64_t t_ps = last_ps_ + uint64_t(format::unzigzag(dt));
  line.clear();
  const Decoded d = format::render_json(line, t_ps, schemas_[schema], p, end);
  if (d == Decoded::ok) last_ps_ = t_ps;
  return d;
}

bool TraceReader::next(std::string& line) {
  for (;;) {
    if (pos_ == len_ && !refill()) {
      if (!ended_) fail("the file ends before the trace does (was the run that wrote it killed?)");
      return false;
    }
    if (ended_) fail("bytes after the end of the trace");
    const uint8_t* p = buf_.data() + pos_;
    uint64_t tag = UINT64_MAX;  // unknown until its varint is read
    const Decoded d = read_record(p, buf_.data() + len_, line, tag);
    if (d == Decoded::malformed) {
      if (tag >= format::kFirstEventTag && tag != UINT64_MAX && tag - format::kFirstEventTag >= schemas_.size())
        fail("an event of schema " + std::to_string(tag - format::kFirstEventTag + 1) +
             ", which no record before it defines");
      fail(tag == format::kSchemaRecord ? "a malformed schema record"
           : tag == UINT64_MAX         ? "a malformed record"
                                       : "a malformed event");
    }
    if (d == Decoded::short_input) {
      if (!refill()) fail("the file ends in the middle of a record (was the run that wrote it killed?)");
      continue;
    }
    pos_ = size_t(p - buf_.data());
    if (tag == format::kEndRecord) {
      ended_ = true;
    } else if (tag != format::kSchemaRecord) {
      events_++;
      return true;
    }
  }
}

uint64_t convert_to_jsonl(const std::string& bin_path, const std::string& jsonl_path) {
  TraceReader in(bin_path);
  std::error_code ec;
  if (std::filesystem::equivalent(bin_path, jsonl_path, ec))
    throw TraceWriteFailed("cannot write " + jsonl_path + ": it is the trace being converted");
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::fopen(jsonl_path.c_str(), "w"), std::fclose);
  const auto cannot_write = [&] { return TraceWriteFailed("cannot write " + jsonl_path + ": " + std::strerror(errno)); };
  if (!out) throw cannot_write();
  std::string line, chunk;
  const auto drain = [&] {
    if (std::fwrite(chunk.data(), 1, chunk.size(), out.get()) != chunk.size()) throw cannot_write();
    chunk.clear();
  };
  try {
    while (in.next(line)) {
      chunk += line;
      chunk += '\n';
      if (chunk.size() >= (1 << 20)) drain();
    }
  } catch (...) {
    drain();  // every event before the fault
    throw;
  }
  drain();
  if (std::fflush(out.get()) != 0) throw cannot_write();
  return in.events_read();
}

}  // namespace irdma_sim::trace
