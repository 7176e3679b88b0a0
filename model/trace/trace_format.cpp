#include "model/trace/trace_format.h"

#include <cstring>

#include "model/trace/text.h"

namespace irdma_sim::trace::format {

std::string header() {
  std::string h(kMagic, sizeof kMagic);
  for (unsigned i = 0; i < 4; i++) h += char(uint8_t(kVersion >> (8 * i)));
  return h;
}

Decoded render_json(std::string& out, uint64_t t_ps, const Schema& schema, const uint8_t*& p, const uint8_t* end) {
  out += "{\"t_ps\":";
  append_number(out, t_ps);
  out += ",\"ev\":\"";
  out += schema.ev;
  out += '"';
  for (const auto& [key, kind] : schema.fields) {
    out += ",\"";
    out += key;
    out += "\":";
    uint64_t v;
    if (const Decoded d = get_varint(p, end, v); d != Decoded::ok) return d;
    switch (kind) {
      case Kind::num:
        append_number(out, v);
        break;
      case Kind::addr:
        out += "\"0x";
        append_number(out, v, 16);
        out += '"';
        break;
      case Kind::str:
      case Kind::hex:
        if (v > kMaxValueBytes) return Decoded::malformed;
        if (v > uint64_t(end - p)) return Decoded::short_input;
        if (kind == Kind::str && !plain_text(p, size_t(v))) return Decoded::malformed;
        out += '"';
        if (kind == Kind::str)
          out.append(reinterpret_cast<const char*>(p), size_t(v));
        else
          append_hex(out, p, size_t(v));
        out += '"';
        p += v;
        break;
    }
  }
  out += '}';
  return Decoded::ok;
}

}  // namespace irdma_sim::trace::format
