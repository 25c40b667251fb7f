// Storage precisions a tensor can have, and their names in YAML/JSON.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace dmuon {

enum class DType { fp64, fp32, bf16, fp16 };

std::string_view to_string(DType dtype);
// Throws dmuon::Error naming `what` when the name is not one of fp64/fp32/bf16/fp16.
DType parse_dtype(std::string_view name, const std::string& what);
std::int64_t bytes_per_element(DType dtype);

}  // namespace dmuon
