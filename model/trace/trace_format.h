// The binary transaction log, trace.bin: what trace.jsonl says, event for event, in about a
// fifth of the bytes and without formatting a number. `irdma-sim trace convert` renders it
// back to trace.jsonl byte for byte (render_json below is the only place that writes a
// trace's JSON).
//
// A file is the header, "IRDMATRC" and the format version as a little-endian u32, then
// records. Every integer in a record is an unsigned LEB128 varint. A record starts with a
// tag:
//   0       the end of the trace, written as the log closes: a file without it was cut
//           short, whatever record it ends on.
//   1       a schema: the event's name, its field count, and per field a kind byte and the
//           field's key (each string a varint length and its bytes). Schemas number 1, 2, …
//           in the order they appear, each before the first event of its shape.
//   n >= 2  an event of schema n - 1: its time as the difference from the previous event's,
//           zigzag-encoded (an event logged late is earlier), then each field's value: num
//           and addr a varint, str and hex a varint length and the bytes.
// Names, keys and str values are printable ASCII without '"' or '\\' (no JSON escapes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace irdma_sim::trace::format {

inline constexpr char kMagic[8] = {'I', 'R', 'D', 'M', 'A', 'T', 'R', 'C'};
inline constexpr uint32_t kVersion = 1;
inline constexpr size_t kHeaderBytes = sizeof kMagic + sizeof(uint32_t);
inline constexpr uint64_t kEndRecord = 0;
inline constexpr uint64_t kSchemaRecord = 1;
inline constexpr uint64_t kFirstEventTag = 2;  // the tag of schema 1's events

// Text a record may hold as it is in a JSON string.
inline bool plain_text(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] < 0x20 || p[i] > 0x7e || p[i] == '"' || p[i] == '\\') return false;
  return true;
}

// How a field's value is written in JSON: a decimal number, a "0x…" string, a string as it
// is, a string of two hex digits per byte.
enum class Kind : uint8_t { num = 0, addr = 1, str = 2, hex = 3 };
inline constexpr uint8_t kKinds = 4;
// Bounds a reader holds a record to, well past what the model writes.
inline constexpr uint64_t kMaxValueBytes = 1 << 16;  // a str or hex value
inline constexpr uint64_t kMaxNameBytes = 256;       // an event's name, a key
inline constexpr uint64_t kMaxSchemaFields = 64;
inline constexpr uint64_t kMaxSchemas = 1 << 16;

struct Schema {
  std::string ev;
  std::vector<std::pair<std::string, Kind>> fields;
};

inline constexpr size_t kMaxVarintBytes = 10;  // 64 bits, 7 a byte

// Writes `v` at `p`, which has room for kMaxVarintBytes; returns the byte after it.
inline uint8_t* put_varint(uint8_t* p, uint64_t v) {
  for (; v >= 0x80; v >>= 7) *p++ = uint8_t(v) | 0x80;
  *p++ = uint8_t(v);
  return p;
}

inline void put_varint(std::string& out, uint64_t v) {
  uint8_t bytes[kMaxVarintBytes];
  out.append(reinterpret_cast<const char*>(bytes), size_t(put_varint(bytes, v) - bytes));
}

// What decoding a record, or a part of one, found.
enum class Decoded { ok, short_input, malformed };

// Reads one varint at `p`, moving it past: short_input when the bytes end first, malformed
// when it runs past 64 bits.
inline Decoded get_varint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (p == end) return Decoded::short_input;
    const uint8_t b = *p++;
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return Decoded::ok;
  }
  return Decoded::malformed;
}

inline uint64_t zigzag(int64_t v) { return (uint64_t(v) << 1) ^ uint64_t(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return int64_t(v >> 1) ^ -int64_t(v & 1); }

// The header a trace.bin starts with.
std::string header();

// Appends an event's trace.jsonl line (without its newline) from its values as a record
// holds them, at `p` (moved past them) up to `end`.
Decoded render_json(std::string& out, uint64_t t_ps, const Schema& schema, const uint8_t*& p, const uint8_t* end);

}  // namespace irdma_sim::trace::format
