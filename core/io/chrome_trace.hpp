// Chrome trace (Trace Event format: Perfetto, chrome://tracing) written as it goes, one event at
// a time through nlohmann::json, so a simulated step of millions of ops never sits in memory as
// one document. The one trace writer of dmuon-sim and dmuon-bench step.
#pragma once
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace dmuon {

class ChromeTrace {
 public:
  // `what` names the trace in errors ("--trace"). Throws dmuon::Error "<what>: cannot write
  // '<file>'".
  ChromeTrace(const std::string& file, std::string what);

  // Metadata ("M") events: the name of a process (pid) and of one of its threads (pid, tid).
  void process_name(int pid, const std::string& name);
  void thread_name(int pid, int tid, const std::string& name);
  // One complete ("X") event; start and duration in microseconds, kept to the nanosecond.
  // `args` is left out when null.
  void complete(const std::string& name, const std::string& category, int pid, int tid, double ts_us, double dur_us,
                const nlohmann::json& args = nullptr);
  // Closes the event list, adds `other_data` as "otherData" when not null, and throws
  // dmuon::Error naming the file when any of it could not be written.
  void finish(const nlohmann::json& other_data = nullptr);

 private:
  void write(const nlohmann::json& event);

  std::string file_, what_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> out_;
  std::string buffer_;
  bool first_ = true;
  nlohmann::json complete_;  // reused by complete(): its keys stay, only the values change
};

}  // namespace dmuon
