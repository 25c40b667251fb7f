#include "harness/verify/sharded_ns_case.hpp"

#include <string>

#include "core/cost/device_profile.hpp"
#include "core/error.hpp"
#include "core/io/yaml_reader.hpp"
#include "core/model/model_yaml.hpp"

namespace dmuon::verify {

ModelSpec sharded_ns_test_model(const std::string& orientation) {
  const std::string shape = orientation == "tall"   ? "[1999, 96]"
                            : orientation == "wide" ? "[96, 1999]"
                            : orientation == "square" ? "[161, 161]"
                                                      : "";
  if (shape.empty()) throw Error("sharded_ns_test_model: orientation '" + orientation + "' is not wide, tall or square");
  const std::string text = "name: verify-sharded-ns-" + orientation +
                           "\n"
                           "dtype: bf16\n"
                           "params:\n"
                           "  - {name: embed.weight, shape: [64, 32], layer: -1}\n"
                           "  - {name: layers.0.norm.weight, shape: [32], layer: 0}\n"
                           "  - {name: layers.0.attn.weight, shape: [32, 32], layer: 0}\n"
                           "  - {name: layers.1.mlp.weight, shape: " +
                           shape + ", layer: 1}\n";
  return parse_model(YamlValue::load_string(text, "verify-sharded-ns (built in)"));
}

CostModel flops_only_cost() {
  DeviceProfile profile = device_profile("h200");
  profile.launch_overhead_us = 0;
  return CostModel(profile);
}

StepPlanOptions free_link_plan_options(ProductSplit split) {
  StepPlanOptions o;
  o.sharded_ns = true;
  o.split_ns_products = split;
  o.node_link.bw_GBps = 1e9;  // 1 EB/s: the all-reduces' bytes cost nothing either
  o.node_link.latency_us = 0;
  return o;
}

}  // namespace dmuon::verify
