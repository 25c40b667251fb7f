// Reading a whole input file into memory, the one way every reader of user files does it.
#pragma once
#include <string>

namespace dmuon {

// The bytes of `path`. Throws Error naming the path when it is not a regular file (a device or a
// fifo such as /dev/zero would be read until memory runs out; reading a folder makes libstdc++
// throw std::ios_failure from inside the stream, which no caller expects), when it cannot be
// opened ("<path>: cannot open file (<reason>)"), or when reading fails part way.
std::string read_regular_file(const std::string& path);

}  // namespace dmuon
