// NumPy .npy files: a strict reader and a small writer, for golden data produced by PyTorch
// (harness/tools/dump_torch_cases.py) and for test fixtures.
//
// Only what the golden files need is accepted: little-endian float32/float64, rank 0..4, format
// versions 1.0, 2.0 and 3.0, in C order or Fortran order (numpy.save writes Fortran order for any
// F-contiguous array, e.g. `.numpy()` of a transposed torch tensor; it is transposed into C order
// on read). Anything else ends in one dmuon::Error that names the file and
// the problem. The reader never trusts the header: every size is checked against the bytes that
// are really there before anything is allocated, so a hostile file cannot crash it or make it
// allocate more than a small multiple of its own size.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dmuon {

struct NpyArray {
  std::vector<std::int64_t> shape;  // empty for a 0-d array (one element)
  std::vector<double> data;         // C order whatever the file's order; float32 widened exactly
  std::string dtype;                // "float32" or "float64", as stored in the file
};

// The largest rank the reader accepts (and the writer produces): weights, grads, MoE stacks.
inline constexpr int kNpyMaxRank = 4;

// Reads and parses a whole file. Throws dmuon::Error naming `path` on any problem.
NpyArray read_npy(const std::string& path);

// Parses the bytes of an .npy file; `name` only labels error messages (the fuzzing entry point).
NpyArray parse_npy(std::string_view bytes, const std::string& name);

// The bytes of a version 1.0 .npy file, byte-identical to numpy.save (NumPy >= 1.23): header
// dict with keys in the order descr, fortran_order, shape, padded with spaces so that magic +
// header, including its final newline, is a multiple of 64 bytes. Throws dmuon::Error when the
// shape has rank above kNpyMaxRank, a negative dimension, or does not hold data.size() values.
std::string format_npy(const std::vector<std::int64_t>& shape, const std::vector<double>& data,
                       bool as_float32);

// format_npy written to `path`; throws dmuon::Error naming `path` if it cannot be written.
void write_npy(const std::string& path, const std::vector<std::int64_t>& shape,
               const std::vector<double>& data, bool as_float32);

}  // namespace dmuon
