#include "core/io/chrome_trace.hpp"

#include <cmath>
#include <utility>

#include "core/error.hpp"

namespace dmuon {
namespace {

constexpr std::size_t kFlushBytes = 1 << 20;

double to_nanosecond(double us) { return std::round(us * 1e3) / 1e3; }

}  // namespace

ChromeTrace::ChromeTrace(const std::string& file, std::string what)
    : file_(file), what_(std::move(what)), out_(std::fopen(file.c_str(), "w"), &std::fclose) {
  if (!out_) throw Error(what_ + ": cannot write '" + file_ + "'");
  buffer_ = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  complete_ = {{"name", ""}, {"cat", ""}, {"ph", "X"}, {"pid", 0}, {"tid", 0}, {"ts", 0.0}, {"dur", 0.0}};
}

void ChromeTrace::write(const nlohmann::json& event) {
  if (!first_) buffer_ += ",\n";
  first_ = false;
  // Labels come from parameter names: replace bytes that are not UTF-8 rather than fail.
  buffer_ += event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (buffer_.size() >= kFlushBytes) {
    std::fwrite(buffer_.data(), 1, buffer_.size(), out_.get());
    buffer_.clear();
  }
}

void ChromeTrace::process_name(int pid, const std::string& name) {
  write({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}});
}

void ChromeTrace::thread_name(int pid, int tid, const std::string& name) {
  write({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
}

void ChromeTrace::complete(const std::string& name, const std::string& category, int pid, int tid, double ts_us,
                           double dur_us, const nlohmann::json& args) {
  complete_["name"] = name;
  complete_["cat"] = category;
  complete_["pid"] = pid;
  complete_["tid"] = tid;
  complete_["ts"] = to_nanosecond(ts_us);
  complete_["dur"] = to_nanosecond(dur_us);
  if (args.is_null()) {
    complete_.erase("args");
  } else {
    complete_["args"] = args;
  }
  write(complete_);
}

void ChromeTrace::finish(const nlohmann::json& other_data) {
  buffer_ += "\n]";
  if (!other_data.is_null()) buffer_ += ",\"otherData\":" + other_data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  buffer_ += "}\n";
  std::fwrite(buffer_.data(), 1, buffer_.size(), out_.get());
  buffer_.clear();
  const bool failed = std::ferror(out_.get()) != 0;
  if (std::fclose(out_.release()) != 0 || failed) throw Error(what_ + ": error writing '" + file_ + "'");
}

}  // namespace dmuon
