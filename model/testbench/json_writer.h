// A small JSON emitter for the run outputs: objects and arrays built in order, so the same
// run writes the same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace irdma_sim::testbench {

// Appends `s` to `out`, escaped.
void append_json_escaped(std::string& out, std::string_view s);

class JsonWriter {
 public:
  JsonWriter& begin_object(const char* key = nullptr);
  JsonWriter& end_object();
  JsonWriter& begin_array(const char* key = nullptr);
  JsonWriter& end_array();
  JsonWriter& num(const char* key, uint64_t v);
  JsonWriter& inum(const char* key, int64_t v);
  JsonWriter& real(const char* key, double v);
  JsonWriter& boolean(const char* key, bool v);
  JsonWriter& null(const char* key);
  JsonWriter& str(const char* key, std::string_view v);
  const std::string& text() const { return out_; }
  // Empties the text for the next document, keeping its storage.
  void clear() {
    out_.clear();
    first_ = true;
  }

 private:
  void prefix(const char* key);
  std::string out_;
  bool first_ = true;
};

}  // namespace irdma_sim::testbench
