#include "core/io/yaml_reader.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/io/file_read.hpp"

namespace dmuon {
namespace {

std::string child_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

// YAML text is Unicode (YAML 1.2, 5.2); yaml-cpp passes invalid UTF-8 through to the strings it
// returns, and its emitter then writes U+FFFD for it, so a saved file would not read back the
// same. Returns the offset of the first byte that is not part of well-formed UTF-8 (no overlong
// forms, no surrogates, nothing above U+10FFFF).
std::optional<std::size_t> invalid_utf8_offset(const std::string& text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  std::size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = byte(i);
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
    if (c < 0x80) length = 1;
    else if (c >= 0xC2 && c <= 0xDF) length = 2;
    else if (c == 0xE0) length = 3, low = 0xA0;
    else if (c == 0xED) length = 3, high = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF) length = 3;
    else if (c == 0xF0) length = 4, low = 0x90;
    else if (c == 0xF4) length = 4, high = 0x8F;
    else if (c >= 0xF1 && c <= 0xF3) length = 4;
    else return i;
    if (i + length > text.size()) return i;
    for (std::size_t k = 1; k < length; ++k) {
      const unsigned char b = byte(i + k);
      if (b < (k == 1 ? low : 0x80) || b > (k == 1 ? high : 0xBF)) return i;
    }
    i += length;
  }
  return std::nullopt;
}

const char* kind_name(const YAML::Node& n) {
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a list";
  if (n.IsNull()) return "empty";
  return "a scalar";
}

}  // namespace

YamlValue::YamlValue(YAML::Node node, std::shared_ptr<const std::string> file, std::string path)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {}

YamlValue YamlValue::load_string(const std::string& text, const std::string& name) {
  if (const auto bad = invalid_utf8_offset(text)) {
    const auto line = std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(*bad), '\n') + 1;
    throw Error(name + ":" + std::to_string(line) + ": not valid YAML: invalid UTF-8 at byte " +
                std::to_string(*bad));
  }
  try {
    return YamlValue(YAML::Load(text), std::make_shared<const std::string>(name), "");
  } catch (const YAML::Exception& e) {
    throw Error(name + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
}

YamlValue YamlValue::load_file(const std::string& file) { return load_string(read_regular_file(file), file); }

int YamlValue::line() const { return node_.Mark().line + 1; }

void YamlValue::fail(const std::string& message) const {
  fail_at((path_.empty() ? "(top level)" : path_) + ": " + message);
}

void YamlValue::fail_at(const std::string& message) const {
  // Appends rather than `":" + std::to_string(...)`: GCC 12 warns falsely (-Wrestrict) on that.
  std::string where = *file_;
  if (node_.Mark().line >= 0) where.append(":").append(std::to_string(line()));
  throw Error(where.append(": ").append(message));
}

std::string YamlValue::as_string() const {
  if (!node_.IsScalar()) fail(std::string("expected a string, found ") + kind_name(node_));
  return node_.Scalar();
}

std::string YamlValue::as_nonempty_string() const {
  std::string s = as_string();
  if (s.empty()) fail("must not be empty");
  return s;
}

double YamlValue::as_double() const {
  if (!node_.IsScalar()) fail(std::string("expected a number, found ") + kind_name(node_));
  const std::string& s = node_.Scalar();
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    fail("expected a number, found '" + s + "'");
  }
  if (used != s.size()) fail("expected a number, found '" + s + "'");
  if (!std::isfinite(v)) fail("expected a finite number, found '" + s + "'");
  return v;
}

double YamlValue::as_positive_double() const {
  const double v = as_double();
  if (!(v > 0)) fail("must be > 0, got " + node_.Scalar());
  return v;
}

double YamlValue::as_nonnegative_double() const {
  const double v = as_double();
  if (v < 0) fail("must be >= 0, got " + node_.Scalar());
  return v;
}

std::int64_t YamlValue::as_int() const {
  if (!node_.IsScalar()) fail(std::string("expected an integer, found ") + kind_name(node_));
  const std::string& s = node_.Scalar();
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &used, 10);
  } catch (const std::out_of_range&) {
    fail("integer out of range: '" + s + "'");
  } catch (const std::exception&) {
    fail("expected an integer, found '" + s + "'");
  }
  if (used != s.size()) fail("expected an integer, found '" + s + "'");
  return v;
}

std::int64_t YamlValue::as_positive_int() const {
  const auto v = as_int();
  if (v <= 0) fail("must be > 0, got " + node_.Scalar());
  return v;
}

int YamlValue::as_int32() const {
  const auto v = as_int();
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
    fail("integer out of range: '" + node_.Scalar() + "'");
  }
  return static_cast<int>(v);
}

bool YamlValue::as_bool() const {
  if (!node_.IsScalar()) fail(std::string("expected true or false, found ") + kind_name(node_));
  const std::string& s = node_.Scalar();
  if (s == "true" || s == "True") return true;
  if (s == "false" || s == "False") return false;
  fail("expected true or false, found '" + s + "'");
}

std::vector<YamlValue> YamlValue::items() const {
  if (!node_.IsSequence()) fail(std::string("expected a list, found ") + kind_name(node_));
  std::vector<YamlValue> out;
  for (std::size_t i = 0; i < node_.size(); ++i) {
    out.emplace_back(node_[i], file_, path_ + "[" + std::to_string(i) + "]");
  }
  return out;
}

std::vector<double> YamlValue::as_double_list() const {
  std::vector<double> out;
  for (const auto& item : items()) out.push_back(item.as_double());
  return out;
}

std::vector<std::int64_t> YamlValue::as_int_list() const {
  std::vector<std::int64_t> out;
  for (const auto& item : items()) out.push_back(item.as_int());
  return out;
}

std::vector<std::string> YamlValue::as_string_list() const {
  std::vector<std::string> out;
  for (const auto& item : items()) out.push_back(item.as_string());
  return out;
}

YamlMap::YamlMap(const YamlValue& value) : value_(value) {
  if (!value.is_map()) value.fail(std::string("expected a mapping, found ") + kind_name(value.node()));
}

bool YamlMap::has(const std::string& key) const { return static_cast<bool>(value_.node()[key]); }

std::optional<YamlValue> YamlMap::find(const std::string& key) const {
  used_.insert(key);
  const YAML::Node child = value_.node()[key];
  if (!child) return std::nullopt;
  return YamlValue(child, value_.file_ptr(), child_path(value_.path(), key));
}

YamlValue YamlMap::get(const std::string& key) const {
  auto v = find(key);
  if (!v) value_.fail("missing required key '" + key + "'");
  return *v;
}

void YamlMap::finish() const {
  for (auto it = value_.node().begin(); it != value_.node().end(); ++it) {
    const std::string key = it->first.Scalar();
    if (!used_.count(key)) {
      YamlValue bad(it->first, value_.file_ptr(), child_path(value_.path(), key));
      bad.fail("unknown key '" + key + "'");
    }
  }
}

}  // namespace dmuon
