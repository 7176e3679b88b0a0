#include "model/testbench/yaml_reader.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

namespace irdma_sim::testbench {

namespace {

std::string where(const std::string& file, const YAML::Mark& m) {
  if (m.line < 0) return file;
  return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

}  // namespace

YAML::Node load_yaml_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ScenarioError(path + ": is a directory, not a scenario file");
  try {
    return YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw ScenarioError(path + ": cannot read the file (" + std::strerror(errno) + ")");
  } catch (const YAML::ParserException& e) {
    throw ScenarioError(where(path, e.mark) + ": YAML syntax error: " + e.msg);
  } catch (const std::exception& e) {
    throw ScenarioError(path + ": cannot read the file: " + e.what());
  }
}

// An absent or empty section reads as an empty mapping. (yaml-cpp nodes for absent keys
// cannot be assigned to, hence the choice before construction.)
static YAML::Node mapping_or_empty(const YAML::Node& node) {
  return node && !node.IsNull() ? node : YAML::Node(YAML::NodeType::Map);
}

YamlMap::YamlMap(const YAML::Node& node, std::string file, std::string path)
    : node_(mapping_or_empty(node)), file_(std::move(file)), path_(std::move(path)) {
  if (!node_.IsMap())
    fail(node_, "'" + (path_.empty() ? std::string("<document>") : path_) + "' must be a mapping");
}

void YamlMap::fail(const YAML::Node& at, const std::string& what) const {
  throw ScenarioError(where(file_, at.Mark()) + ": " + what);
}

std::string YamlMap::key_path(const char* key) const {
  return path_.empty() ? key : path_ + "." + key;
}

void YamlMap::allow(std::initializer_list<const char*> keys) const {
  std::map<std::string, YAML::Mark> seen;
  for (const auto& kv : node_) {
    // YAML allows a sequence or a mapping as a key ("? - a"); a scenario's keys are names.
    if (!kv.first.IsScalar()) fail(kv.first, "a key in '" + (path_.empty() ? std::string("<document>") : path_) +
                                                 "' must be a name, not a list or a mapping");
    const std::string k = kv.first.Scalar();
    // yaml-cpp keeps both and reads the first: a second one would be dropped unseen.
    const auto [first, fresh] = seen.emplace(k, kv.first.Mark());
    if (!fresh)
      fail(kv.first, "key '" + key_path(k.c_str()) + "' is given twice (first at line " +
                         std::to_string(first->second.line + 1) + ")");
    bool known = false;
    std::string list;
    for (const char* a : keys) {
      known = known || k == a;
      list += list.empty() ? a : std::string(", ") + a;
    }
    if (!known)
      fail(kv.first, "unknown key '" + key_path(k.c_str()) + "' (allowed here: " + list + ")");
  }
}

std::string YamlMap::scalar(const char* key) const {
  const YAML::Node n = node_[key];
  if (!n.IsScalar()) fail(n, "key '" + key_path(key) + "' must be a single value");
  return n.Scalar();
}

uint64_t YamlMap::u64(const char* key, uint64_t def, uint64_t min, uint64_t max) const {
  if (!has(key)) return def;
  const std::string s = scalar(key);
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (s.empty() || s[0] == '-' || *end || errno || v < min || v > max)
    fail(node_[key], "key '" + key_path(key) + "' must be an integer in [" + std::to_string(min) +
                         ", " + std::to_string(max) + "], got '" + s + "'");
  return v;
}

int64_t YamlMap::i64(const char* key, int64_t def, int64_t min, int64_t max) const {
  if (!has(key)) return def;
  const std::string s = scalar(key);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 0);
  if (s.empty() || *end || errno || v < min || v > max)
    fail(node_[key], "key '" + key_path(key) + "' must be an integer in [" + std::to_string(min) +
                         ", " + std::to_string(max) + "], got '" + s + "'");
  return v;
}

double YamlMap::f64(const char* key, double def, double min, double max) const {
  if (!has(key)) return def;
  const std::string s = scalar(key);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end || !std::isfinite(v) || v < min || v > max)
    fail(node_[key], "key '" + key_path(key) + "' must be a number in [" + std::to_string(min) +
                         ", " + std::to_string(max) + "], got '" + s + "'");
  return v;
}

bool YamlMap::boolean(const char* key, bool def) const {
  if (!has(key)) return def;
  const std::string s = scalar(key);
  if (s == "true") return true;
  if (s == "false") return false;
  fail(node_[key], "key '" + key_path(key) + "' must be true or false, got '" + s + "'");
}

std::string YamlMap::str(const char* key, const std::string& def) const {
  return has(key) ? scalar(key) : def;
}

size_t YamlMap::choice(const char* key, size_t def, const std::vector<std::string>& choices) const {
  if (!has(key)) return def;
  const std::string s = scalar(key);
  std::string list;
  for (size_t i = 0; i < choices.size(); i++) {
    if (s == choices[i]) return i;
    list += (i ? ", " : "") + choices[i];
  }
  fail(node_[key], "key '" + key_path(key) + "' must be one of " + list + ", got '" + s + "'");
}

std::vector<uint32_t> YamlMap::u32_list(const char* key, uint32_t min, uint32_t max) const {
  std::vector<uint32_t> out;
  if (!has(key)) return out;
  const YAML::Node n = node_[key];
  if (!n.IsSequence() || n.size() == 0)
    fail(n, "key '" + key_path(key) + "' must be a non-empty list of integers");
  for (size_t i = 0; i < n.size(); i++) {
    uint64_t v = 0;
    const std::string item = key_path(key) + "[" + std::to_string(i) + "]";
    if (!n[i].IsScalar() || !YAML::convert<uint64_t>::decode(n[i], v) || v < min || v > max)
      fail(n[i], "key '" + item + "' must be an integer in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "], got '" + (n[i].IsScalar() ? n[i].Scalar() : "") + "'");
    out.push_back(uint32_t(v));
  }
  return out;
}

std::vector<size_t> YamlMap::choice_list(const char* key, const std::vector<size_t>& def,
                                         const std::vector<std::string>& choices) const {
  if (!has(key)) return def;
  const YAML::Node n = node_[key];
  std::string allowed;
  for (size_t i = 0; i < choices.size(); i++) allowed += (i ? ", " : "") + choices[i];
  if (!n.IsSequence() || n.size() == 0)
    fail(n, "key '" + key_path(key) + "' must be a non-empty list of " + allowed);
  std::vector<size_t> out;
  for (size_t i = 0; i < n.size(); i++) {
    const std::string s = n[i].IsScalar() ? n[i].Scalar() : "";
    const auto it = std::find(choices.begin(), choices.end(), s);
    if (it == choices.end())
      fail(n[i], "key '" + key_path(key) + "[" + std::to_string(i) + "]' must be one of " +
                     allowed + ", got '" + s + "'");
    out.push_back(size_t(it - choices.begin()));
  }
  return out;
}

YamlMap YamlMap::map(const char* key) const {
  return YamlMap(node_[key], file_, key_path(key));
}

std::vector<YamlMap> YamlMap::list_of_maps(const char* key) const {
  std::vector<YamlMap> out;
  if (!has(key)) return out;
  const YAML::Node n = node_[key];
  if (!n.IsSequence()) fail(n, "key '" + key_path(key) + "' must be a list");
  for (size_t i = 0; i < n.size(); i++)
    out.emplace_back(n[i], file_, key_path(key) + "[" + std::to_string(i) + "]");
  return out;
}

}  // namespace irdma_sim::testbench
