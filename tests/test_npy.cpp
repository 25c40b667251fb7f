// core/npy: round trips, byte-exact NumPy layouts built from the documented format, files NumPy
// itself wrote in both orders (tests/data/npy, made by make_npy.py there), header variations
// numpy.load accepts, and every refusal.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "core/error.hpp"
#include "core/file_read.hpp"
#include "core/npy.hpp"
#include "test_temp_dir.hpp"

namespace {

using dmuon::NpyArray;
using dmuon::parse_npy;

const std::string kMagic("\x93NUMPY", 6);

std::string le(std::uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xffu));
  return s;
}
std::string f32_bytes(const std::vector<float>& v) {
  std::string s;
  for (float x : v) {
    std::uint32_t u;
    std::memcpy(&u, &x, 4);
    s += le(u, 4);
  }
  return s;
}
std::string f64_bytes(const std::vector<double>& v) {
  std::string s;
  for (double x : v) {
    std::uint64_t u;
    std::memcpy(&u, &x, 8);
    s += le(u, 8);
  }
  return s;
}

// A file of format version major.0 whose header is exactly `header` (no padding added).
std::string npy_file(int major, const std::string& header, const std::string& data) {
  std::string s = kMagic;
  s.push_back(static_cast<char>(major));
  s.push_back('\0');
  s += le(header.size(), major == 1 ? 2 : 4);
  return s + header + data;
}

// The header numpy.save writes for a v1 file (NumPy format docs + numpy/lib/format.py
// behaviour): sorted keys, ", " separators, a trailing ", " before '}', 21 - len(str(shape[0]))
// growth spaces for rank >= 1, then 1..64 spaces and '\n' up to a multiple of 64.
std::string numpy_header(const std::string& descr, const std::string& shape, std::size_t first_dim_digits) {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  if (shape != "()") h.append(21 - first_dim_digits, ' ');
  h.append(64 - (10 + h.size() + 1) % 64, ' ');
  return h + "\n";
}

std::string parse_error(const std::string& bytes, const std::string& name = "case.npy") {
  try {
    parse_npy(bytes, name);
  } catch (const dmuon::Error& e) {
    return e.what();
  }
  return "<no error>";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Checks that `bytes` is refused with a message naming the file and containing every word.
void check_refused(const std::string& bytes, const std::vector<std::string>& words) {
  const std::string msg = parse_error(bytes);
  INFO("message: " << msg);
  CHECK(contains(msg, "npy file 'case.npy'"));
  for (const auto& w : words) CHECK(contains(msg, w));
}

std::string valid_f4_header(const std::string& shape) {
  return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }\n";
}

std::filesystem::path temp_path(const std::string& tag) { return dmuon::test::temp_dir() / (tag + ".npy"); }

}  // namespace

TEST_CASE("npy: write then read round-trips float64 and float32 of ranks 0..4", "[npy]") {
  const std::vector<std::vector<std::int64_t>> shapes = {
      {}, {5}, {3, 4}, {2, 3, 4}, {2, 1, 3, 2}, {0}, {3, 0}, {1, 1}, {12345}};
  for (bool f32 : {false, true}) {
    for (const auto& shape : shapes) {
      std::int64_t n = 1;
      for (auto d : shape) n *= d;
      std::vector<double> data(static_cast<std::size_t>(n));
      for (std::size_t i = 0; i < data.size(); ++i) data[i] = 0.1 * static_cast<double>(i) - 1.0 / 3.0;
      if (!data.empty()) data[0] = -0.0;
      const auto path = temp_path("rt");
      dmuon::write_npy(path.string(), shape, data, f32);
      const NpyArray a = dmuon::read_npy(path.string());
      std::filesystem::remove(path);
      INFO("rank " << shape.size() << (f32 ? " f32" : " f64"));
      CHECK(a.shape == shape);
      CHECK(a.dtype == (f32 ? "float32" : "float64"));
      REQUIRE(a.data.size() == data.size());
      bool exact = true;
      for (std::size_t i = 0; i < data.size(); ++i) {
        const double want = f32 ? static_cast<double>(static_cast<float>(data[i])) : data[i];
        exact = exact && a.data[i] == want && std::signbit(a.data[i]) == std::signbit(want);
      }
      CHECK(exact);
    }
  }
}

TEST_CASE("npy: writer output is byte-identical to numpy.save", "[npy]") {
  SECTION("np.save(np.arange(3, dtype=np.float32)): 128-byte header") {
    // 57-char dict + 20 growth spaces + 40 pad spaces + '\n' = 118 = 0x76; 10 + 118 = 128.
    const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }" +
                               std::string(60, ' ') + "\n";
    REQUIRE(header.size() == 118);
    std::string want = kMagic + std::string("\x01\x00\x76\x00", 4) + header;
    want += std::string("\x00\x00\x00\x00" "\x00\x00\x80\x3f" "\x00\x00\x00\x40", 12);
    CHECK(dmuon::format_npy({3}, {0.0, 1.0, 2.0}, true) == want);
  }
  SECTION("np.save(np.float64(1.5)): 0-d, no growth spaces") {
    const std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (), }" +
                               std::string(62, ' ') + "\n";
    REQUIRE(header.size() == 118);
    const std::string want = kMagic + std::string("\x01\x00\x76\x00", 4) + header +
                             std::string("\x00\x00\x00\x00\x00\x00\xf8\x3f", 8);
    CHECK(dmuon::format_npy({}, {1.5}, false) == want);
  }
  SECTION("2-d and 4-d float64 headers end on a 64-byte boundary") {
    for (const auto& shape : std::vector<std::vector<std::int64_t>>{{2, 3}, {1000, 7, 1, 2}}) {
      std::int64_t n = 1;
      for (auto d : shape) n *= d;
      const std::string bytes = dmuon::format_npy(shape, std::vector<double>(static_cast<std::size_t>(n), 2.0), false);
      const std::size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
      CHECK((10 + header_len) % 64 == 0);
      CHECK(bytes[10 + header_len - 1] == '\n');
      CHECK(bytes.size() == 10 + header_len + 8 * static_cast<std::size_t>(n));
    }
    const std::string h = numpy_header("<f8", "(2, 3)", 1);
    CHECK(dmuon::format_npy({2, 3}, std::vector<double>(6, 0.0), false) ==
          npy_file(1, h, f64_bytes(std::vector<double>(6, 0.0))));
  }
}

TEST_CASE("npy: hand-built valid files parse", "[npy]") {
  const std::string data3 = f32_bytes({1.5f, -2.0f, 3.25f});
  auto check3 = [](const NpyArray& a) {
    CHECK(a.shape == std::vector<std::int64_t>{3});
    CHECK(a.dtype == "float32");
    CHECK(a.data == std::vector<double>{1.5, -2.0, 3.25});
  };
  SECTION("numpy's own layout, versions 1.0, 2.0, 3.0") {
    for (int major : {1, 2, 3}) {
      INFO("version " << major);
      check3(parse_npy(npy_file(major, numpy_header("<f4", "(3,)", 1), data3), "v.npy"));
    }
  }
  SECTION("0-d array: shape ()") {
    const NpyArray a = parse_npy(npy_file(1, numpy_header("<f8", "()", 0), f64_bytes({-7.5})), "s.npy");
    CHECK(a.shape.empty());
    CHECK(a.dtype == "float64");
    CHECK(a.data == std::vector<double>{-7.5});
  }
  SECTION("spacing, quoting and key-order variations") {
    const std::vector<std::string> headers = {
        "{'descr':'<f4','fortran_order':False,'shape':(3,)}",
        "{ 'descr' : '<f4' , 'fortran_order' : False , 'shape' : ( 3 , ) , }\n",
        "{'shape': (3,), 'fortran_order': False, 'descr': '<f4'}\n",
        "{'fortran_order': False, 'shape': (3,), 'descr': '<f4', }      \n",
        "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (3,)}\n",
        "\t{'descr': '<f4',\n 'fortran_order': False,\r\n 'shape': (3,)}\n",
        "{'descr': '=f4', 'fortran_order': False, 'shape': (3,), }\n",
        "{'descr': '|f4', 'fortran_order': False, 'shape': (3,), }\n",
        // legacy NumPy (< 1.9) aligned to 16, not 64, bytes: alignment is not required
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }    \n",
    };
    for (const auto& h : headers) {
      INFO("header: " << h);
      for (int major : {1, 2}) check3(parse_npy(npy_file(major, h, data3), "var.npy"));
    }
  }
  SECTION("rank 4, trailing comma after the last dimension, zero-size arrays") {
    const NpyArray a = parse_npy(npy_file(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2, 1, 2,)}\n",
                                          f64_bytes({1, 2, 3, 4})), "r4.npy");
    CHECK(a.shape == std::vector<std::int64_t>{1, 2, 1, 2});
    CHECK(a.data == std::vector<double>{1, 2, 3, 4});
    const NpyArray z = parse_npy(npy_file(1, valid_f4_header("(4, 0)"), ""), "z.npy");
    CHECK(z.shape == std::vector<std::int64_t>{4, 0});
    CHECK(z.data.empty());
  }
  SECTION("special values are kept bit-exactly") {
    const NpyArray a = parse_npy(npy_file(1, valid_f4_header("(4,)"),
                                          f32_bytes({INFINITY, -INFINITY, 1e-45f, -0.0f})), "sp.npy");
    CHECK(a.data[0] == INFINITY);
    CHECK(a.data[1] == -INFINITY);
    CHECK(a.data[2] == static_cast<double>(1e-45f));
    CHECK(std::signbit(a.data[3]));
  }
}

// The value make_npy.py stores at element `index`: 100*i0 + 10*i1 + i2 + 1/3 in float64.
double fixture_value(const std::vector<std::int64_t>& index) {
  const double weights[] = {100.0, 10.0, 1.0};
  double v = 0.0;
  for (std::size_t a = 0; a < index.size(); ++a) v = v + weights[a] * static_cast<double>(index[a]);
  return v + 1.0 / 3.0;
}

// The multi-index of C-order position `c` in `shape`.
std::vector<std::int64_t> c_index(std::size_t c, const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> index(shape.size());
  for (std::size_t a = shape.size(); a-- > 0;) {
    index[a] = static_cast<std::int64_t>(c % static_cast<std::size_t>(shape[a]));
    c /= static_cast<std::size_t>(shape[a]);
  }
  return index;
}

TEST_CASE("npy: files numpy.save wrote in C and in Fortran order read identically", "[npy]") {
  // tests/data/npy/make_npy.py wrote them (NumPy 1.24.2); the 1-d Fortran files carry
  // fortran_order True, written by numpy.lib.format's header writer.
  const std::string dir = std::string(DMUON_TEST_DATA) + "/npy/";
  const std::vector<std::vector<std::int64_t>> shapes = {{5}, {3, 4}, {2, 3, 4}};
  for (const auto& shape : shapes) {
    for (const bool f32 : {true, false}) {
      const std::string stem = dir + std::to_string(shape.size()) + "d_" + (f32 ? "f32" : "f64");
      INFO(stem);
      const NpyArray c = dmuon::read_npy(stem + "_c.npy");
      const NpyArray f = dmuon::read_npy(stem + "_f.npy");
      // The header really says what the test is about (a regenerated file could lose it).
      const std::string f_bytes = dmuon::read_regular_file(stem + "_f.npy");
      const std::string c_bytes = dmuon::read_regular_file(stem + "_c.npy");
      CHECK(contains(f_bytes.substr(0, 128), "'fortran_order': True"));
      CHECK(contains(c_bytes.substr(0, 128), "'fortran_order': False"));
      for (const NpyArray* a : {&c, &f}) {
        CHECK(a->shape == shape);
        CHECK(a->dtype == (f32 ? "float32" : "float64"));
      }
      REQUIRE(c.data.size() == f.data.size());
      bool identical = true, expected = true;
      for (std::size_t i = 0; i < c.data.size(); ++i) {
        const double v = fixture_value(c_index(i, shape));
        const double want = f32 ? static_cast<double>(static_cast<float>(v)) : v;
        identical = identical && c.data[i] == f.data[i];
        expected = expected && c.data[i] == want;
      }
      CHECK(identical);
      CHECK(expected);
      if (shape.size() >= 2) CHECK(c_bytes.substr(128) != f_bytes.substr(128));  // the orders differ on disk
    }
  }
}

TEST_CASE("npy: Fortran order of rank 4 and zero-size arrays is transposed into C order", "[npy]") {
  // Hand-built: the file lists elements with the first axis fastest.
  const std::vector<std::int64_t> shape{2, 1, 3, 2};
  std::vector<double> fortran_bytes_order;
  for (std::int64_t l = 0; l < 2; ++l)
    for (std::int64_t k = 0; k < 3; ++k)
      for (std::int64_t j = 0; j < 1; ++j)
        for (std::int64_t i = 0; i < 2; ++i) fortran_bytes_order.push_back(static_cast<double>(1000 * i + 100 * j + 10 * k + l));
  const NpyArray a = parse_npy(
      npy_file(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 1, 3, 2), }\n", f64_bytes(fortran_bytes_order)),
      "f4d.npy");
  CHECK(a.shape == shape);
  REQUIRE(a.data.size() == 12);
  bool ok = true;
  for (std::size_t c = 0; c < a.data.size(); ++c) {
    const auto ix = c_index(c, shape);
    ok = ok && a.data[c] == static_cast<double>(1000 * ix[0] + 100 * ix[1] + 10 * ix[2] + ix[3]);
  }
  CHECK(ok);
  const NpyArray z = parse_npy(npy_file(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 0, 2), }\n", ""), "fz.npy");
  CHECK(z.shape == std::vector<std::int64_t>{3, 0, 2});
  CHECK(z.data.empty());
  const NpyArray s = parse_npy(npy_file(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (), }\n", f64_bytes({2.5})), "fs.npy");
  CHECK(s.data == std::vector<double>{2.5});
}

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
