// core/io/npy: every refusal (malformed headers and data, file-level errors naming the path, and
// random corruptions that must surface as dmuon::Error and nothing else).

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "core/error.hpp"
#include "core/io/file_read.hpp"
#include "core/io/npy.hpp"
#include "npy_test_support.hpp"

using namespace npy_test;
using dmuon::NpyArray;
using dmuon::parse_npy;

TEST_CASE("npy: malformed files are refused with a clear message", "[npy]") {
  const std::string good = npy_file(1, valid_f4_header("(3,)"), f32_bytes({1, 2, 3}));
  REQUIRE(parse_error(good) == "<no error>");

  SECTION("bad magic") {
    std::string b = good;
    b[5] = 'Z';
    check_refused(b, {"bad magic"});
    check_refused("PK\x03\x04 this is a zip file", {"bad magic"});
  }
  SECTION("truncated header") {
    check_refused("", {"truncated header"});
    check_refused(kMagic.substr(0, 4), {"truncated header"});
    check_refused(good.substr(0, 9), {"truncated header"});
    check_refused(good.substr(0, 30), {"truncated header", "header length"});
    check_refused(kMagic + std::string("\x02\x00\xff\xff\xff\xff", 6) + "{}", {"truncated header", "4294967295"});
  }
  SECTION("unsupported format version") {
    std::string b = good;
    b[6] = 4;
    check_refused(b, {"unsupported format version 4.0"});
    b[6] = 1;
    b[7] = 1;
    check_refused(b, {"unsupported format version 1.1"});
  }
  SECTION("header that is not the expected dict") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"[1, 2]\n", "does not start with '{'"},
        {"{'descr': '<f4', 'fortran_order': False}\n", "missing key 'shape'"},
        {"{'fortran_order': False, 'shape': (3,)}\n", "missing key 'descr'"},
        {"{'descr': '<f4', 'shape': (3,)}\n", "missing key 'fortran_order'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'extra': 1}\n", "unexpected key 'extra'"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}\n", "duplicate key 'descr'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)\n", "expected ',' or '}'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} x\n", "unexpected text after"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3)}\n", "not a tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [3]}\n", "shape must be a tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3.0,)}\n", "expected ',' or ')'"},
        {"{'descr': '<f4', 'fortran_order': 0, 'shape': (3,)}\n", "True or False"},
        {"{'descr': <f4, 'fortran_order': False, 'shape': (3,)}\n", "quoted string"},
        {"{'descr': '<f4, 'fortran_order': False, 'shape': (3,)}\n", "header is not the expected dict"},
        {"{descr: '<f4', 'fortran_order': False, 'shape': (3,)}\n", "quoted string"},
        {"{'descr' '<f4', 'fortran_order': False, 'shape': (3,)}\n", "expected ':'"},
        {"{'de\\x73cr': '<f4', 'fortran_order': False, 'shape': (3,)}\n", "unsupported character"},
        {"", "does not start with '{'"},
    };
    for (const auto& [header, words] : cases) {
      INFO("header: " << header);
      check_refused(npy_file(1, header, f32_bytes({1, 2, 3})), {"header is not the expected dict", words});
    }
  }
  SECTION("unsupported dtype, naming it") {
    auto with_descr = [](const std::string& descr) {
      return npy_file(1, "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (3,), }\n", std::string(24, '\0'));
    };
    check_refused(with_descr("<f2"), {"unsupported dtype '<f2'"});
    check_refused(with_descr(">f4"), {"unsupported dtype '>f4'", "big-endian"});
    check_refused(with_descr(">f8"), {"unsupported dtype '>f8'", "big-endian"});
    check_refused(with_descr("<i8"), {"unsupported dtype '<i8'"});
    check_refused(with_descr("<c8"), {"unsupported dtype '<c8'"});
    check_refused(with_descr("f4"), {"unsupported dtype 'f4'"});
    check_refused(with_descr("float32"), {"unsupported dtype 'float32'"});
    check_refused(npy_file(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,)}\n", ""),
                  {"unsupported dtype", "structured"});
  }
  SECTION("Fortran order is held to the same checks") {
    const std::string f4_fortran = "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }\n";
    check_refused(npy_file(1, f4_fortran, f32_bytes({1, 2, 3, 4, 5})), {"truncated data: expected 24 bytes, found 20"});
    check_refused(npy_file(1, f4_fortran, f32_bytes({1, 2, 3, 4, 5, 6, 7})), {"trailing data"});
    check_refused(npy_file(1, "{'descr': '>f8', 'fortran_order': True, 'shape': (2, 3), }\n", std::string(48, '\0')),
                  {"unsupported dtype '>f8'", "big-endian"});
    check_refused(npy_file(1, "{'descr': '<f4', 'fortran_order': true, 'shape': (2, 3), }\n", f32_bytes({1, 2, 3, 4, 5, 6})),
                  {"fortran_order must be True or False"});
    check_refused(npy_file(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 1, 1, 1, 1), }\n", f32_bytes({1})),
                  {"rank above 4"});
  }
  SECTION("negative, overflowing and too many dimensions") {
    check_refused(npy_file(1, valid_f4_header("(-1, 3)"), ""), {"negative dimension -1"});
    check_refused(npy_file(1, valid_f4_header("(99999999999999999999,)"), ""), {"overflows int64"});
    check_refused(npy_file(1, valid_f4_header("(9223372036854775807, 2)"), ""), {"too large", "overflows int64"});
    // 2^62 float32 elements are 2^64 bytes: each factor fits, the byte count does not.
    check_refused(npy_file(1, valid_f4_header("(4611686018427387904,)"), ""), {"too large"});
    check_refused(npy_file(1, valid_f4_header("(3037000500, 3037000500)"), ""), {"too large"});
    check_refused(npy_file(1, valid_f4_header("(1, 1, 1, 1, 1)"), f32_bytes({1})), {"rank above 4"});
  }
  SECTION("data shorter or longer than the shape says") {
    check_refused(npy_file(1, valid_f4_header("(3,)"), f32_bytes({1, 2})), {"truncated data: expected 12 bytes, found 8"});
    check_refused(npy_file(1, valid_f4_header("(3,)"), f32_bytes({1, 2, 3, 4})),
                  {"trailing data: expected 12 bytes, found 16"});
    check_refused(npy_file(1, valid_f4_header("(3,)"), f32_bytes({1, 2, 3}) + "x"), {"expected 12 bytes, found 13"});
    // A header promising 8e18 bytes must be refused by the size check, before any allocation.
    check_refused(npy_file(2, "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000, 1000000000)}\n", "abc"),
                  {"truncated data: expected 8000000000000000000 bytes, found 3"});
  }
}

TEST_CASE("npy: file-level errors name the path", "[npy]") {
  const auto missing = temp_path("does_not_exist");
  try {
    dmuon::read_npy(missing.string());
    FAIL("no error for a missing file");
  } catch (const dmuon::Error& e) {
    CHECK(contains(e.what(), missing.string()));
    CHECK(contains(e.what(), "cannot open"));
  }
  // A folder made libstdc++ throw std::ios_failure mid-read; a device would be read forever.
  for (const std::string& not_a_file : {dmuon::test::temp_dir().string(), std::string("/dev/zero")}) {
    try {
      dmuon::read_npy(not_a_file);
      FAIL("no error for " << not_a_file);
    } catch (const dmuon::Error& e) {
      CHECK(std::string(e.what()) == not_a_file + ": not a regular file");
    }
  }
  // Shapes live in variables: a braced list inside a Catch macro would split its arguments.
  const std::vector<std::int64_t> shape23{2, 3}, negative{-1}, rank5{1, 1, 1, 1, 1}, one{1};
  const std::vector<double> five(5), single{1.0}, none;
  CHECK_THROWS_AS(dmuon::write_npy(temp_path("bad").string(), shape23, five, true), dmuon::Error);
  CHECK_THROWS_AS(dmuon::format_npy(negative, none, true), dmuon::Error);
  CHECK_THROWS_AS(dmuon::format_npy(rank5, single, true), dmuon::Error);
  CHECK_FALSE(std::filesystem::exists(temp_path("bad")));
  CHECK_THROWS_AS(dmuon::write_npy("/nonexistent-dir/x.npy", one, single, true), dmuon::Error);
}

TEST_CASE("npy: truncations and random corruptions never escape as anything but dmuon::Error", "[npy]") {
  const std::vector<std::string> seeds = {
      dmuon::format_npy({2, 3}, {1, 2, 3, 4, 5, 6}, true),
      dmuon::format_npy({}, {3.5}, false),
      npy_file(2, "{'shape': (2, 2,), 'descr': \"<f8\", 'fortran_order': False}\n", f64_bytes({1, 2, 3, 4})),
  };
  std::mt19937 rng(12345);
  int parsed = 0, refused = 0;
  auto attempt = [&](const std::string& bytes) {
    try {
      const NpyArray a = parse_npy(bytes, "fuzz.npy");
      std::size_t n = 1;
      for (auto d : a.shape) n *= static_cast<std::size_t>(d);
      if (n != a.data.size()) FAIL("parsed shape and data size disagree");
      ++parsed;
    } catch (const dmuon::Error&) {
      ++refused;
    }
  };
  for (const auto& s : seeds) {
    for (std::size_t len = 0; len < s.size(); ++len) attempt(s.substr(0, len));
    for (int trial = 0; trial < 20000; ++trial) {
      std::string b = s;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        const std::size_t pos = rng() % b.size();
        switch (rng() % 3) {
          case 0: b[pos] = static_cast<char>(rng() & 0xff); break;  // random byte
          case 1: b[pos] = "{}(),:' -0123456789TF"[rng() % 21]; break;  // grammar-aware byte
          default:  // delete 1..3 bytes, keeping at least one (push_back: GCC 12 warns, falsely,
                    // -Wrestrict on assigning a literal here, GCC bug 105329)
            b.erase(pos, 1 + rng() % 3);
            if (b.empty()) b.push_back('x');
            break;
        }
      }
      attempt(b);
    }
  }
  CHECK(parsed > 0);
  CHECK(refused > 0);
}
