// Reads a binary trace (trace.bin) back as the trace.jsonl lines it stands for, streaming:
// what `irdma-sim trace convert` writes, and what every reader of a run's trace reads.
#pragma once

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/trace/trace_format.h"

namespace irdma_sim::trace {

// A file a reader cannot start on: unreadable, no binary trace, or one of another format
// version.
struct TraceRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The converted trace could not be written where asked.
struct TraceWriteFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class TraceReader {
 public:
  // Throws TraceRefused.
  explicit TraceReader(const std::string& path);
  // Reads `in` (which it closes), called `name` in errors.
  TraceReader(std::FILE* in, const std::string& name);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  // The next event's line, without its newline; false after the last. Throws
  // std::runtime_error naming the byte where the file is malformed or ends mid-record (a
  // run killed as it wrote): every event before it has been read.
  bool next(std::string& line);
  uint64_t events_read() const { return events_; }

 private:
  // `tag` is the record's, once its varint is read.
  format::Decoded read_record(const uint8_t*& p, const uint8_t* end, std::string& line, uint64_t& tag);
  format::Decoded read_schema(const uint8_t*& p, const uint8_t* end);
  bool refill();
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_;
  std::FILE* in_ = nullptr;
  std::vector<uint8_t> buf_;
  size_t pos_ = 0, len_ = 0;
  uint64_t buf_offset_ = 0;  // the file offset of buf_[0]
  bool eof_ = false;
  bool ended_ = false;  // the end-of-trace record was read
  std::vector<format::Schema> schemas_;
  uint64_t last_ps_ = 0;
  uint64_t events_ = 0;
};

// Writes the trace.jsonl that the binary trace at `bin_path` stands for at `jsonl_path`;
// returns the events written. Throws as TraceReader does: TraceRefused before creating
// `jsonl_path`, a fault in the records having written every event before it. Throws
// TraceWriteFailed when `jsonl_path` cannot be written.
uint64_t convert_to_jsonl(const std::string& bin_path, const std::string& jsonl_path);

}  // namespace irdma_sim::trace
