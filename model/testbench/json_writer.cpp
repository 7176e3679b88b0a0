#include "model/testbench/json_writer.h"

#include "model/trace/text.h"

#include <cstdio>

namespace irdma_sim::testbench {

void append_json_escaped(std::string& out, std::string_view s) {
  size_t plain = 0;  // the run of characters that need no escape, appended at once
  for (size_t i = 0; i < s.size(); i++) {
    const char c = s[i];
    if (c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20) continue;
    out.append(s.data() + plain, i - plain);
    plain = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      }
    }
  }
  out.append(s.data() + plain, s.size() - plain);
}

void JsonWriter::prefix(const char* key) {
  if (!first_) out_ += ',';
  first_ = false;
  if (key) {
    out_ += '"';
    append_json_escaped(out_, key);
    out_ += "\":";
  }
}

JsonWriter& JsonWriter::begin_object(const char* key) {
  prefix(key);
  out_ += '{';
  first_ = true;
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  out_ += '}';
  first_ = false;
  return *this;
}

JsonWriter& JsonWriter::begin_array(const char* key) {
  prefix(key);
  out_ += '[';
  first_ = true;
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  out_ += ']';
  first_ = false;
  return *this;
}

JsonWriter& JsonWriter::num(const char* key, uint64_t v) {
  prefix(key);
  trace::append_number(out_, v);
  return *this;
}

JsonWriter& JsonWriter::inum(const char* key, int64_t v) {
  prefix(key);
  trace::append_number(out_, v);
  return *this;
}

JsonWriter& JsonWriter::real(const char* key, double v) {
  prefix(key);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  out_ += buf;
  return *this;
}

JsonWriter& JsonWriter::boolean(const char* key, bool v) {
  prefix(key);
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null(const char* key) {
  prefix(key);
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::str(const char* key, std::string_view v) {
  prefix(key);
  out_ += '"';
  append_json_escaped(out_, v);
  out_ += '"';
  return *this;
}

}  // namespace irdma_sim::testbench
