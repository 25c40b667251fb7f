#include "core/io/npy.hpp"

#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>

#include "core/error.hpp"
#include "core/io/file_read.hpp"

namespace dmuon {
namespace {

// "\x93NUMPY", then one byte each of major and minor version.
constexpr std::string_view kMagic{"\x93NUMPY", 6};
constexpr std::size_t kPrefixV1 = 10;  // magic 6 + version 2 + uint16 header length
constexpr std::size_t kPrefixV2 = 12;  // magic 6 + version 2 + uint32 header length
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

[[noreturn]] void fail(const std::string& name, const std::string& problem) {
  throw Error("npy file '" + name + "': " + problem);
}

// Loads are assembled byte by byte so the result does not depend on the host's byte order.
std::uint64_t load_le(const char* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

void store_le(std::string& out, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xffu));
}

std::string shape_repr(const std::vector<std::int64_t>& shape) {
  // Python's tuple repr, so messages and headers look like what NumPy prints.
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

// Bytes of an array of `shape` with `itemsize`-byte elements; nullopt when that overflows int64.
// A zero dimension makes the size 0 whatever the others are.
std::optional<std::int64_t> checked_nbytes(const std::vector<std::int64_t>& shape,
                                           std::int64_t itemsize) {
  for (std::int64_t d : shape)
    if (d == 0) return 0;
  std::int64_t n = itemsize;
  for (std::int64_t d : shape) {
    if (d < 0 || n > kInt64Max / d) return std::nullopt;
    n *= d;
  }
  return n;
}

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
};

// The header is the repr() of a Python dict. Rather than evaluate Python, this accepts the
// small literal subset NumPy writes (and reasonable hand-written variations: any key order,
// single or double quotes, optional trailing commas, spaces anywhere between tokens), and
// requires exactly the keys descr, fortran_order and shape, as numpy.load does.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  Header parse() {
    skip_ws();
    if (!eat('{')) bad("it does not start with '{'");
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    for (;;) {
      skip_ws();
      if (eat('}')) break;
      const std::string key = string_literal("a key");
      skip_ws();
      if (!eat(':')) bad("expected ':' after key '" + key + "'");
      skip_ws();
      if (key == "descr") {
        once(seen_descr, key);
        if (peek() == '[') fail(name_, "unsupported dtype: structured (list) descr, need '<f4' or '<f8'");
        header_.descr = string_literal("the descr value");
      } else if (key == "fortran_order") {
        once(seen_fortran, key);
        header_.fortran_order = boolean();
      } else if (key == "shape") {
        once(seen_shape, key);
        header_.shape = shape_tuple();
      } else {
        bad("unexpected key '" + key + "' (expected descr, fortran_order, shape)");
      }
      skip_ws();
      if (eat(',')) continue;
      if (eat('}')) break;
      bad("expected ',' or '}' at header offset " + std::to_string(pos_));
    }
    skip_ws();
    if (pos_ != s_.size()) bad("unexpected text after the closing '}' at header offset " + std::to_string(pos_));
    if (!seen_descr) bad("missing key 'descr'");
    if (!seen_fortran) bad("missing key 'fortran_order'");
    if (!seen_shape) bad("missing key 'shape'");
    return header_;
  }

 private:
  [[noreturn]] void bad(const std::string& why) const {
    fail(name_, "header is not the expected dict {'descr', 'fortran_order', 'shape'}: " + why);
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool eat(char c) {
    if (pos_ >= s_.size() || s_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  void once(bool& seen, const std::string& key) const {
    if (seen) bad("duplicate key '" + key + "'");
    seen = true;
  }

  // 'abc' or "abc"; escapes never occur in what NumPy writes, so a backslash is refused rather
  // than half-interpreted.
  std::string string_literal(const std::string& what) {
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected a quoted string for " + what + " at header offset " + std::to_string(pos_));
    ++pos_;
    const std::size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\' || s_[pos_] == '\n') bad("unsupported character in a string at header offset " + std::to_string(pos_));
      ++pos_;
    }
    if (pos_ >= s_.size()) bad("unterminated string for " + what);
    std::string out(s_.substr(start, pos_ - start));
    ++pos_;
    return out;
  }

  bool boolean() {
    if (s_.substr(pos_, 4) == "True") { pos_ += 4; return true; }
    if (s_.substr(pos_, 5) == "False") { pos_ += 5; return false; }
    bad("fortran_order must be True or False");
  }

  // A Python tuple of non-negative ints: (), (5,), (3, 4), (3, 4,). "(5)" is the int 5 in
  // Python, not a tuple, and numpy.load refuses it too.
  std::vector<std::int64_t> shape_tuple() {
    if (!eat('(')) bad("shape must be a tuple such as (3, 4)");
    std::vector<std::int64_t> dims;
    bool trailing_comma = false;
    for (;;) {
      skip_ws();
      if (eat(')')) break;
      if (static_cast<int>(dims.size()) == kNpyMaxRank)
        fail(name_, "shape has rank above " + std::to_string(kNpyMaxRank) + ", the largest supported");
      dims.push_back(dimension());
      skip_ws();
      trailing_comma = eat(',');
      if (trailing_comma) continue;
      if (eat(')')) break;
      bad("expected ',' or ')' in shape at header offset " + std::to_string(pos_));
    }
    if (dims.size() == 1 && !trailing_comma) bad("shape (" + std::to_string(dims[0]) + ") is not a tuple; a 1-d shape is written (n,)");
    return dims;
  }

  std::int64_t dimension() {
    const bool negative = eat('-');
    if (peek() < '0' || peek() > '9') bad("expected an integer in shape at header offset " + std::to_string(pos_));
    std::int64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      const int digit = peek() - '0';
      if (v > (kInt64Max - digit) / 10) fail(name_, "shape dimension overflows int64");
      v = v * 10 + digit;
      ++pos_;
    }
    if (negative && v != 0) fail(name_, "negative dimension -" + std::to_string(v) + " in shape");
    return v;
  }

  std::string_view s_;
  const std::string& name_;
  std::size_t pos_ = 0;
  Header header_;
};

// Element size for a descr, or a clear refusal. '=' (native) and '|' (byte order not given) are
// read as little-endian: they are what a little-endian machine means, and every machine that
// writes our golden files is one.
std::int64_t itemsize_of(const std::string& descr, const std::string& name) {
  const std::string quoted = "'" + descr + "'";
  if (descr.size() == 3 && descr[0] == '>' && (descr.substr(1) == "f4" || descr.substr(1) == "f8"))
    fail(name, "unsupported dtype " + quoted + ": big-endian, need little-endian '<f4' or '<f8'");
  if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '=' || descr[0] == '|')) {
    if (descr.substr(1) == "f4") return 4;
    if (descr.substr(1) == "f8") return 8;
  }
  fail(name, "unsupported dtype " + quoted + " (supported: '<f4' float32, '<f8' float64)");
}

// Fortran order stores element (i0, ..., i_{n-1}) at i0 + d0 * (i1 + d1 * (i2 + ...)): the first
// axis varies fastest, i.e. the strides of C order with the axes reversed. Walks the file's
// order with an odometer whose first digit turns fastest and puts each value at its C index.
// The shape was checked against the bytes present, so every index here is in range.
std::vector<double> fortran_to_c_order(const std::vector<double>& file, const std::vector<std::int64_t>& shape) {
  const std::size_t rank = shape.size();
  std::vector<std::size_t> c_stride(rank, 1);
  for (std::size_t a = rank - 1; a > 0; --a) c_stride[a - 1] = c_stride[a] * static_cast<std::size_t>(shape[a]);
  std::vector<double> out(file.size());
  std::vector<std::int64_t> index(rank, 0);
  std::size_t c = 0;  // C index of `index`, kept up to date as the odometer turns
  for (double v : file) {
    out[c] = v;
    for (std::size_t a = 0; a < rank; ++a) {
      if (++index[a] < shape[a]) {
        c += c_stride[a];
        break;
      }
      c -= static_cast<std::size_t>(index[a] - 1) * c_stride[a];
      index[a] = 0;
    }
  }
  return out;
}

}  // namespace

NpyArray parse_npy(std::string_view bytes, const std::string& name) {
  if (bytes.size() < kMagic.size() && kMagic.substr(0, bytes.size()) == bytes)
    fail(name, "truncated header: file has only " + std::to_string(bytes.size()) + " bytes");
  if (bytes.size() < kMagic.size() || bytes.substr(0, kMagic.size()) != kMagic)
    fail(name, "bad magic: not a NumPy .npy file (expected \\x93NUMPY)");
  if (bytes.size() < kPrefixV1)
    fail(name, "truncated header: file has only " + std::to_string(bytes.size()) + " bytes");
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  if (minor != 0 || major < 1 || major > 3)
    fail(name, "unsupported format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (supported: 1.0, 2.0, 3.0)");
  // 1.0 stores the header length in 2 bytes; 2.0 and 3.0 (3.0 only allows a UTF-8 header, which
  // changes nothing for the ASCII dicts accepted here) in 4.
  const std::size_t prefix = major == 1 ? kPrefixV1 : kPrefixV2;
  if (bytes.size() < prefix)
    fail(name, "truncated header: file has only " + std::to_string(bytes.size()) + " bytes");
  const std::uint64_t header_len = load_le(bytes.data() + 8, major == 1 ? 2 : 4);
  if (header_len > bytes.size() - prefix)
    fail(name, "truncated header: header length " + std::to_string(header_len) + " but only " +
                   std::to_string(bytes.size() - prefix) + " bytes follow");

  const Header h = HeaderParser(bytes.substr(prefix, header_len), name).parse();
  const std::int64_t itemsize = itemsize_of(h.descr, name);
  const std::optional<std::int64_t> nbytes = checked_nbytes(h.shape, itemsize);
  if (!nbytes) fail(name, "shape " + shape_repr(h.shape) + " is too large: its size in bytes overflows int64");

  // Compare before allocating: the header alone must never decide how much memory we take.
  const std::uint64_t found = bytes.size() - prefix - header_len;
  const std::uint64_t expected = static_cast<std::uint64_t>(*nbytes);
  if (found < expected)
    fail(name, "truncated data: expected " + std::to_string(expected) + " bytes, found " + std::to_string(found));
  if (found > expected)
    fail(name, "trailing data: expected " + std::to_string(expected) + " bytes, found " + std::to_string(found));

  NpyArray out;
  out.shape = h.shape;
  out.dtype = itemsize == 4 ? "float32" : "float64";
  const std::size_t count = static_cast<std::size_t>(expected / static_cast<std::uint64_t>(itemsize));
  out.data.resize(count);
  const char* p = bytes.data() + prefix + header_len;
  for (std::size_t i = 0; i < count; ++i, p += itemsize) {
    if (itemsize == 4)
      out.data[i] = std::bit_cast<float>(static_cast<std::uint32_t>(load_le(p, 4)));
    else
      out.data[i] = std::bit_cast<double>(load_le(p, 8));
  }
  // Below rank 2 both orders are the same bytes.
  if (h.fortran_order && h.shape.size() >= 2) out.data = fortran_to_c_order(out.data, h.shape);
  return out;
}

NpyArray read_npy(const std::string& path) { return parse_npy(read_regular_file(path), path); }

std::string format_npy(const std::vector<std::int64_t>& shape, const std::vector<double>& data,
                       bool as_float32) {
  // Same limits as the reader, so whatever we write we can read back.
  if (static_cast<int>(shape.size()) > kNpyMaxRank)
    throw Error("write_npy: rank " + std::to_string(shape.size()) + " above the supported " + std::to_string(kNpyMaxRank));
  for (std::int64_t d : shape)
    if (d < 0) throw Error("write_npy: negative dimension in shape " + shape_repr(shape));
  const std::int64_t itemsize = as_float32 ? 4 : 8;
  const std::optional<std::int64_t> nbytes = checked_nbytes(shape, itemsize);
  if (!nbytes || *nbytes / itemsize != static_cast<std::int64_t>(data.size()))
    throw Error("write_npy: shape " + shape_repr(shape) + " does not hold " + std::to_string(data.size()) + " values");

  std::string header = std::string("{'descr': '") + (as_float32 ? "<f4" : "<f8") +
                       "', 'fortran_order': False, 'shape': " + shape_repr(shape) + ", }";
  // Byte-identical to numpy.save (NumPy >= 1.23), so our files and NumPy's can be compared
  // byte for byte. NumPy first leaves room for the first axis to grow to 21 digits (so a file
  // can be appended to in place), then pads with 1..64 spaces (64, not 0, when already
  // aligned) so magic + header + '\n' is a multiple of 64: data can be mapped at any alignment.
  if (!shape.empty()) header.append(21 - std::to_string(shape[0]).size(), ' ');
  const std::size_t unpadded = kPrefixV1 + header.size() + 1;  // + the final '\n'
  header.append(64 - unpadded % 64, ' ');
  header.push_back('\n');

  std::string out(kMagic);
  out.push_back('\x01');
  out.push_back('\x00');
  store_le(out, header.size(), 2);
  out += header;
  out.reserve(out.size() + static_cast<std::size_t>(*nbytes));
  for (double v : data) {
    if (as_float32)
      store_le(out, std::bit_cast<std::uint32_t>(static_cast<float>(v)), 4);
    else
      store_le(out, std::bit_cast<std::uint64_t>(v), 8);
  }
  return out;
}

void write_npy(const std::string& path, const std::vector<std::int64_t>& shape,
               const std::vector<double>& data, bool as_float32) {
  const std::string bytes = format_npy(shape, data, as_float32);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("npy file '" + path + "': cannot open for writing: " + std::strerror(errno));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw Error("npy file '" + path + "': write failed");
}

}  // namespace dmuon
