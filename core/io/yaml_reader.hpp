// Strict reading of YAML (and JSON, which YAML reads too): every error names the file, the
// key path and the line, and a mapping rejects keys nobody asked for.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace dmuon {

class YamlValue {
 public:
  YamlValue(YAML::Node node, std::shared_ptr<const std::string> file, std::string path);
  // Both throw dmuon::Error naming the file (and line) when it cannot be read or parsed.
  static YamlValue load_file(const std::string& file);
  static YamlValue load_string(const std::string& text, const std::string& name);

  // "file:line: path: message" as a dmuon::Error.
  [[noreturn]] void fail(const std::string& message) const;
  // "file:line: message" for a message that already names the path.
  [[noreturn]] void fail_at(const std::string& message) const;

  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }
  const std::string& path() const { return path_; }
  const std::string& file() const { return *file_; }
  const std::shared_ptr<const std::string>& file_ptr() const { return file_; }
  int line() const;  // 1-based

  std::string as_string() const;
  std::string as_nonempty_string() const;  // fails "must not be empty" on ""
  double as_double() const;              // finite numbers only
  double as_positive_double() const;     // > 0
  double as_nonnegative_double() const;  // >= 0
  std::int64_t as_int() const;
  std::int64_t as_positive_int() const;  // > 0
  int as_int32() const;                  // fits in an int (no silent wrap-around on the cast)
  bool as_bool() const;
  std::vector<YamlValue> items() const;  // a sequence's elements
  std::vector<double> as_double_list() const;
  std::vector<std::int64_t> as_int_list() const;
  std::vector<std::string> as_string_list() const;

  const YAML::Node& node() const { return node_; }

 private:
  YAML::Node node_;
  std::shared_ptr<const std::string> file_;
  std::string path_;
};

// Parses a scalar with a core parser `parse(text, path)` that throws dmuon::Error naming the
// path, and adds the file and line to its message.
template <typename Parse>
auto parse_scalar(const YamlValue& value, Parse parse) {
  const std::string text = value.as_string();
  try {
    return parse(text, value.path());
  } catch (const std::runtime_error& e) {
    value.fail_at(e.what());
  }
}

// A mapping read key by key. finish() fails on the first key that was never asked for, so a
// typo ("learning_rate:") is an error, not a silently ignored setting.
class YamlMap {
 public:
  explicit YamlMap(const YamlValue& value);
  bool has(const std::string& key) const;
  YamlValue get(const std::string& key) const;  // fails when missing
  std::optional<YamlValue> find(const std::string& key) const;
  const YamlValue& value() const { return value_; }
  void finish() const;

 private:
  YamlValue value_;
  mutable std::set<std::string> used_;
};

}  // namespace dmuon
