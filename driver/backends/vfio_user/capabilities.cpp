#include "driver/backends/vfio_user/capabilities.h"

#include <cctype>
#include <cerrno>
#include <limits>
#include <utility>

#include "driver/backends/vfio_user/protocol.h"

namespace pcie::vfio_user {
namespace {

// Enough JSON to hold what a peer sends; numbers keep their value only when they are
// non-negative integers that fit 64 bits, the only kind a capability takes.
struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = Kind::kNull;
  bool integral = false;
  uint64_t integer = 0;
  std::string text;
  std::vector<std::pair<std::string, Json>> members;
  std::vector<Json> items;
};

[[noreturn]] void bad_json(const std::string& why) { throw VfioUserError(EINVAL, "VERSION capabilities: " + why); }

class JsonReader {
 public:
  explicit JsonReader(std::string_view text) : text_(text) {}

  Json document() {
    Json value = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) bad_json("unexpected text after the JSON value at byte " + std::to_string(pos_));
    return value;
  }

 private:
  static constexpr int kMaxDepth = 32;  // a hostile peer's nesting must not exhaust the stack

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  void expect(char c) {
    skip_space();
    if (peek() != c) bad_json(std::string("expected '") + c + "' at byte " + std::to_string(pos_));
    ++pos_;
  }

  Json parse_value(int depth) {
    if (depth > kMaxDepth) bad_json("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    skip_space();
    if (at_end()) bad_json("unexpected end of text");
    char c = peek();
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') {
      Json v;
      v.kind = Json::Kind::kString;
      v.text = parse_string();
      return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number();
    Json v;
    if (literal("true")) {
      v.kind = Json::Kind::kBool;
    } else if (literal("false")) {
      v.kind = Json::Kind::kBool;
    } else if (!literal("null")) {
      bad_json("unexpected character at byte " + std::to_string(pos_));
    }
    return v;
  }

  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Json parse_object(int depth) {
    Json v;
    v.kind = Json::Kind::kObject;
    ++pos_;  // '{'
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return v;
    }
    for (;;) {
      skip_space();
      if (peek() != '"') bad_json("expected a key string at byte " + std::to_string(pos_));
      std::string key = parse_string();
      expect(':');
      v.members.emplace_back(std::move(key), parse_value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      return v;
    }
  }

  Json parse_array(int depth) {
    Json v;
    v.kind = Json::Kind::kArray;
    ++pos_;  // '['
    skip_space();
    if (peek() == ']') {
      ++pos_;
      return v;
    }
    for (;;) {
      v.items.push_back(parse_value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']');
      return v;
    }
  }

  static bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

  // Keys we look for are ASCII, so \uXXXX stands as '?' rather than being decoded.
  std::string parse_string() {
    ++pos_;  // '"'
    std::string out;
    for (;;) {
      if (at_end()) bad_json("unterminated string");
      char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) bad_json("control character in a string at byte " + std::to_string(pos_ - 1));
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end()) bad_json("unterminated escape");
      char e = text_[pos_++];
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u':
          for (int i = 0; i < 4; ++i)
            if (at_end() || !is_hex(text_[pos_++])) bad_json("bad \\u escape");
          out += '?';
          break;
        default: bad_json(std::string("bad escape '\\") + e + "'");
      }
    }
  }

  Json parse_number() {
    Json v;
    v.kind = Json::Kind::kNumber;
    bool negative = peek() == '-';
    if (negative) ++pos_;
    if (!std::isdigit(static_cast<unsigned char>(peek()))) bad_json("bad number at byte " + std::to_string(pos_));
    bool overflow = false;
    if (peek() == '0') {
      ++pos_;
    } else {
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        uint64_t digit = static_cast<uint64_t>(text_[pos_++] - '0');
        if (v.integer > (std::numeric_limits<uint64_t>::max() - digit) / 10) overflow = true;
        v.integer = v.integer * 10 + digit;
      }
    }
    bool fraction_or_exponent = false;
    if (peek() == '.') {
      ++pos_;
      fraction_or_exponent = true;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) bad_json("bad fraction at byte " + std::to_string(pos_));
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      fraction_or_exponent = true;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) bad_json("bad exponent at byte " + std::to_string(pos_));
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    }
    v.integral = !negative && !overflow && !fraction_or_exponent;
    return v;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

const Json* member(const Json& object, std::string_view key) {
  const Json* found = nullptr;
  for (const auto& [name, value] : object.members)
    if (name == key) found = &value;  // the last of duplicates wins, as in most readers
  return found;
}

uint64_t positive_integer(const Json& object, std::string_view key, uint64_t fallback, uint64_t max) {
  const Json* value = member(object, key);
  if (!value) return fallback;
  if (value->kind != Json::Kind::kNumber || !value->integral || value->integer == 0 || value->integer > max)
    bad_json(std::string(key) + " must be an integer from 1 to " + std::to_string(max));
  return value->integer;
}

}  // namespace

std::string capabilities_to_json(const Capabilities& c) {
  return "{\"capabilities\":{\"max_msg_fds\":" + std::to_string(c.max_msg_fds) +
         ",\"max_data_xfer_size\":" + std::to_string(c.max_data_xfer_size) +
         ",\"max_dma_maps\":" + std::to_string(c.max_dma_maps) + ",\"pgsizes\":" + std::to_string(c.pgsizes) + "}}";
}

Capabilities capabilities_from_json(std::string_view text) {
  Json document = JsonReader(text).document();
  if (document.kind != Json::Kind::kObject) bad_json("the document is not a JSON object");
  Capabilities caps;
  const Json* object = member(document, "capabilities");
  if (!object) return caps;
  if (object->kind != Json::Kind::kObject) bad_json("\"capabilities\" is not an object");
  constexpr uint64_t kU32 = std::numeric_limits<uint32_t>::max();
  caps.max_msg_fds = static_cast<uint32_t>(positive_integer(*object, "max_msg_fds", caps.max_msg_fds, kU32));
  caps.max_data_xfer_size =
      static_cast<uint32_t>(positive_integer(*object, "max_data_xfer_size", caps.max_data_xfer_size, kU32));
  caps.max_dma_maps = static_cast<uint32_t>(positive_integer(*object, "max_dma_maps", caps.max_dma_maps, kU32));
  caps.pgsizes = positive_integer(*object, "pgsizes", caps.pgsizes, std::numeric_limits<uint64_t>::max());
  return caps;
}

std::vector<uint8_t> encode_version(const Version& version) {
  std::vector<uint8_t> payload;
  append(payload, VersionPayload{version.major, version.minor});
  std::string json = capabilities_to_json(version.capabilities);
  append_bytes(payload, json.c_str(), json.size() + 1);  // with its NUL
  return payload;
}

Version decode_version(const std::vector<uint8_t>& payload) {
  auto pair = load<VersionPayload>(payload, 0, "VERSION");
  Version version{pair.major, pair.minor, {}};
  if (payload.size() == sizeof(VersionPayload)) return version;
  std::string_view json(reinterpret_cast<const char*>(payload.data()) + sizeof(VersionPayload),
                        payload.size() - sizeof(VersionPayload));
  size_t nul = json.find('\0');
  if (nul == std::string_view::npos) bad_json("the JSON text is not NUL-terminated");
  json = json.substr(0, nul);
  if (!json.empty()) version.capabilities = capabilities_from_json(json);
  return version;
}

}  // namespace pcie::vfio_user
