// Element types of the executor's device buffers (no other dmuon header, so .cu files built
// as C++17 by nvcc can use it).
#pragma once
#include <cstddef>

namespace dmuon::exec {

enum class ElementType { bf16, fp16, fp32 };
inline std::size_t element_bytes(ElementType t) { return t == ElementType::fp32 ? 4 : 2; }

}  // namespace dmuon::exec
