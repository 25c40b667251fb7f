#include "harness/bench/layers_json.hpp"

#include "core/error.hpp"
#include "core/io/yaml_reader.hpp"

namespace dmuon::bench {

// JSON is YAML: the section reader of core/cost/calibration reads this file, so a measurement is
// checked the same way here and when the calibration file that holds it is read back. This
// format asks for every list and elementwise_GBps, which a calibration file may leave out.
ForwardBackwardTable load_layers_json(const std::string& file) {
  YamlValue root = [&] {
    try {
      return YamlValue::load_file(file);  // read_regular_file inside: no folder, no /dev/zero
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " (the forward/backward measurements of --layers-json)");
    }
  }();
  const YamlMap top(root);
  for (const char* key : {"source", "elementwise_GBps", "gemm", "attention", "layers"}) {
    if (!top.has(key)) root.fail(std::string("missing required key '") + key + "'");
  }
  return parse_forward_backward(root);
}

}  // namespace dmuon::bench
