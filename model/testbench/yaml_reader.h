// Strict reading of YAML documents: every error names the file, the line and the key,
// unknown keys are errors, and numbers are range-checked.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace irdma_sim::testbench {

class ScenarioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A mapping node at `path` (e.g. "config.device") of `file`.
class YamlMap {
 public:
  YamlMap(const YAML::Node& node, std::string file, std::string path);

  // Rejects any key not in `keys`, and any key given twice.
  void allow(std::initializer_list<const char*> keys) const;
  bool has(const char* key) const { return bool(node_[key]); }

  uint64_t u64(const char* key, uint64_t def, uint64_t min, uint64_t max) const;
  uint32_t u32(const char* key, uint32_t def, uint32_t min, uint32_t max) const {
    return uint32_t(u64(key, def, min, max));
  }
  int64_t i64(const char* key, int64_t def, int64_t min, int64_t max) const;
  double f64(const char* key, double def, double min, double max) const;
  bool boolean(const char* key, bool def) const;
  std::string str(const char* key, const std::string& def) const;
  // One of `choices`; returns its index.
  size_t choice(const char* key, size_t def, const std::vector<std::string>& choices) const;

  // A list of integers in [min, max] (empty when absent).
  std::vector<uint32_t> u32_list(const char* key, uint32_t min, uint32_t max) const;
  // A list of choices; returns their indices (`def` when absent).
  std::vector<size_t> choice_list(const char* key, const std::vector<size_t>& def,
                                  const std::vector<std::string>& choices) const;

  YamlMap map(const char* key) const;  // an empty map when absent
  std::vector<YamlMap> list_of_maps(const char* key) const;

  [[noreturn]] void fail(const YAML::Node& at, const std::string& what) const;
  // An error about `key`, located at its value when the mapping has it, else at the mapping.
  [[noreturn]] void fail_at(const char* key, const std::string& what) const {
    fail(has(key) ? node_[key] : node_, what);
  }
  // An error about this mapping as a whole, located at its start.
  [[noreturn]] void fail(const std::string& what) const { fail(node_, what); }
  const std::string& file() const { return file_; }

 private:
  std::string key_path(const char* key) const;
  std::string scalar(const char* key) const;

  YAML::Node node_;
  std::string file_;
  std::string path_;
};

// Parses `path`; syntax errors become ScenarioErrors with the file and line.
YAML::Node load_yaml_file(const std::string& path);

}  // namespace irdma_sim::testbench
