// The one error type of dmuon: a message that names the field, file, rank or op at fault.
#pragma once
#include <stdexcept>
#include <string>

namespace dmuon {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace dmuon
