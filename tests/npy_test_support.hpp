// Helpers of the core/io/npy tests (test_npy.cpp, test_npy_errors.cpp): byte builders for files
// laid out as the NumPy format documents them, and the refusal check.
#pragma once
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "core/error.hpp"
#include "core/io/npy.hpp"
#include "test_temp_dir.hpp"

namespace npy_test {

using dmuon::NpyArray;
using dmuon::parse_npy;

inline const std::string kMagic("\x93NUMPY", 6);

inline std::string le(std::uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xffu));
  return s;
}
inline std::string f32_bytes(const std::vector<float>& v) {
  std::string s;
  for (float x : v) {
    std::uint32_t u;
    std::memcpy(&u, &x, 4);
    s += le(u, 4);
  }
  return s;
}
inline std::string f64_bytes(const std::vector<double>& v) {
  std::string s;
  for (double x : v) {
    std::uint64_t u;
    std::memcpy(&u, &x, 8);
    s += le(u, 8);
  }
  return s;
}

// A file of format version major.0 whose header is exactly `header` (no padding added).
inline std::string npy_file(int major, const std::string& header, const std::string& data) {
  std::string s = kMagic;
  s.push_back(static_cast<char>(major));
  s.push_back('\0');
  s += le(header.size(), major == 1 ? 2 : 4);
  return s + header + data;
}

// The header numpy.save writes for a v1 file (NumPy format docs + numpy/lib/format.py
// behaviour): sorted keys, ", " separators, a trailing ", " before '}', 21 - len(str(shape[0]))
// growth spaces for rank >= 1, then 1..64 spaces and '\n' up to a multiple of 64.
inline std::string numpy_header(const std::string& descr, const std::string& shape, std::size_t first_dim_digits) {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  if (shape != "()") h.append(21 - first_dim_digits, ' ');
  h.append(64 - (10 + h.size() + 1) % 64, ' ');
  return h + "\n";
}

inline std::string parse_error(const std::string& bytes, const std::string& name = "case.npy") {
  try {
    parse_npy(bytes, name);
  } catch (const dmuon::Error& e) {
    return e.what();
  }
  return "<no error>";
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Checks that `bytes` is refused with a message naming the file and containing every word.
inline void check_refused(const std::string& bytes, const std::vector<std::string>& words) {
  const std::string msg = parse_error(bytes);
  INFO("message: " << msg);
  CHECK(contains(msg, "npy file 'case.npy'"));
  for (const auto& w : words) CHECK(contains(msg, w));
}

inline std::string valid_f4_header(const std::string& shape) {
  return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }\n";
}

inline std::filesystem::path temp_path(const std::string& tag) { return dmuon::test::temp_dir() / (tag + ".npy"); }

}  // namespace npy_test
