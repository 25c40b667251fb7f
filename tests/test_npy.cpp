// core/io/npy: round trips, byte-exact NumPy layouts built from the documented format, files NumPy
// itself wrote in both orders (tests/data/npy, made by make_npy.py there) and header variations
// numpy.load accepts. Refusals: test_npy_errors.cpp.

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
