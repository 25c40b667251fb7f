#include "core/optimizer/dtype.hpp"

#include "core/error.hpp"

namespace dmuon {

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::fp64: return "fp64";
    case DType::fp32: return "fp32";
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
  }
  return "?";
}

DType parse_dtype(std::string_view name, const std::string& what) {
  if (name == "fp64" || name == "float64") return DType::fp64;
  if (name == "fp32" || name == "float32") return DType::fp32;
  if (name == "bf16" || name == "bfloat16") return DType::bf16;
  if (name == "fp16" || name == "float16") return DType::fp16;
  throw Error(what + ": unknown dtype '" + std::string(name) + "' (expected fp64, fp32, bf16 or fp16)");
}

std::int64_t bytes_per_element(DType dtype) {
  switch (dtype) {
    case DType::fp64: return 8;
    case DType::fp32: return 4;
    case DType::bf16:
    case DType::fp16: return 2;
  }
  return 0;
}

}  // namespace dmuon
