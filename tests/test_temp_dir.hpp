// The test process's own temporary directory: created on first use under $TMPDIR (else /tmp)
// with a unique name (mkdtemp), removed with everything in it when the process exits. Tests
// write only there, so parallel runs (ctest -j, two checkouts, two users) never share a file.
// A crashed test leaves its directory behind; nothing else does.
#pragma once
#include <stdlib.h>  // mkdtemp (POSIX)

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace dmuon::test {

class TempDir {
 public:
  TempDir() {
    // program_invocation_short_name (glibc) names the test in the directory, for a reader of /tmp.
    std::string pattern =
        (std::filesystem::temp_directory_path() / (std::string("dmuon-") + program_invocation_short_name + "-XXXXXX"))
            .string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("cannot create a temporary directory " + pattern + ": " + std::strerror(errno));
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;  // a destructor must not throw; a leftover dir is harmless
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The directory, made on first call and removed at exit (a function-local static).
inline const std::filesystem::path& temp_dir() {
  static const TempDir dir;
  return dir.path();
}

// A path inside temp_dir(); `name` may contain '/' for a subfolder the caller creates.
inline std::string temp_path(const std::string& name) { return (temp_dir() / name).string(); }

}  // namespace dmuon::test
