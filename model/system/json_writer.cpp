#include "model/system/json_writer.h"

#include <cstdio>

namespace irdma_sim::system {

std::string json_escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

void JsonWriter::prefix(const char* key) {
  if (!first_) out_ += ',';
  first_ = false;
  if (key) {
    out_ += '"';
    out_ += json_escape(key);
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
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::inum(const char* key, int64_t v) {
  prefix(key);
  out_ += std::to_string(v);
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

JsonWriter& JsonWriter::str(const char* key, const std::string& v) {
  prefix(key);
  out_ += '"';
  out_ += json_escape(v);
  out_ += '"';
  return *this;
}

}  // namespace irdma_sim::system
