// libFuzzer target: the model YAML loader (core/model/model_yaml.hpp parse_model) and the default
// routing of what it accepts (every consumer routes the model next).
#include "core/model/model_yaml.hpp"
#include "core/model/routing.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = dmuon::fuzz::as_text(data, size);
  dmuon::fuzz::expect_only_errors([&] {
    const dmuon::ModelSpec model = dmuon::parse_model(dmuon::YamlValue::load_string(text, "fuzz-model.yaml"));
    const dmuon::Routing routing = dmuon::route_parameters(model, {});
    dmuon::fuzz::require(routing.per_param.size() == model.params.size(), "every parameter is routed");
  });
  return 0;
}
