// A small JSON emitter for the run outputs: objects and arrays built in order, so the same
// run writes the same bytes.
#pragma once

#include <cstdint>
#include <string>

namespace irdma_sim::system {

std::string json_escape(const std::string& s);

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
  JsonWriter& str(const char* key, const std::string& v);
  const std::string& text() const { return out_; }

 private:
  void prefix(const char* key);
  std::string out_;
  bool first_ = true;
};

}  // namespace irdma_sim::system
