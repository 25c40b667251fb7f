#include "core/io/file_read.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.hpp"

namespace dmuon {

std::string read_regular_file(const std::string& path) {
  std::error_code error;
  if (std::filesystem::exists(path, error) && !std::filesystem::is_regular_file(path, error)) {
    throw Error(path + ": not a regular file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open file (" + std::strerror(errno) + ")");
  // libstdc++'s filebuf throws std::ios_failure when read(2) fails (the check above can race
  // with a rename, and a disk can fail); that becomes our one error type.
  try {
    std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (in.bad()) throw Error(path + ": read error");
    return bytes;
  } catch (const std::ios_base::failure& e) {
    throw Error(path + ": read error (" + e.what() + ")");
  }
}

}  // namespace dmuon
