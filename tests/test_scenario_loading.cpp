// Scenario YAML is strict: every malformed file fails with one message that names the file,
// the line and the key path.
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "core/error.hpp"
#include "core/io/scenario.hpp"

using namespace dmuon;

namespace {

const char* kGood = R"(name: tiny
model:
  name: tiny-model
  transformer: {hidden: 64, layers: 2, heads: 4, ffn: 128, vocab: 1000}
optimizer:
  preset: dmuon
  lr: 0.01
  ns: {coefficients: keller, restarts: []}
routing:
  adamw: ["model.layers.0.self_attn.q_proj.weight"]
strategies: [adamw, dedicated]
cluster: {nodes: 2, gpus_per_node: 8, gpu: a800, gpu_memory_GiB: 80}
)";

std::string error_of(const std::string& text) {
  try {
    parse_scenario(text, "bad.yaml");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a valid scenario loads every section", "[scenario]") {
  const auto s = parse_scenario(kGood, "good.yaml");
  CHECK(s.name == "tiny");
  CHECK(s.model.params.size() > 10);
  CHECK(s.optimizer.preset == "dmuon");
  CHECK(s.optimizer.muon.lr == 0.01);
  CHECK(s.optimizer.muon.ns.schedule_name == "keller");
  CHECK(s.optimizer.muon.ns.steps == 5);
  CHECK(s.optimizer.muon.ns.variant == NsVariant::gram);  // from the preset
  CHECK(s.strategies == std::vector<Strategy>{Strategy::adamw, Strategy::dedicated});
  CHECK(s.cluster.world_size() == 16);
  CHECK(s.routing.adamw.size() == 1);
}

TEST_CASE("every shipped scenario and model file loads", "[scenario]") {
  // Kept in step with scenarios/: a file that stops loading fails here.
  const std::string dir = std::string(DMUON_SOURCE_DIR) + "/scenarios/";
  for (const char* f : {"verify-small.yaml"}) {
    INFO(f);
    CHECK_NOTHROW(load_scenario(dir + f));
  }
}

TEST_CASE("malformed scenarios name file, line and key", "[scenario]") {
  struct Case {
    std::string text;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {"name: x\nmodel: {name: m, transformer: {hidden: 64, layers: 2, heads: 4, ffn: 8}}\nlearning_rate: 1\n",
       {"bad.yaml:3:", "unknown key 'learning_rate'"}},
      {"name: x\nmodel:\n  name: m\n  transformer: {hidden: -64, layers: 2, heads: 4, ffn: 8}\n",
       {"bad.yaml:4:", "model.transformer.hidden", "must be > 0"}},
      {"name: x\nmodel:\n  name: m\n  transformer: {hidden: 64, layers: 0, heads: 4, ffn: 8}\n",
       {"model.transformer.layers", "must be > 0"}},
      {"name: x\nmodel:\n  name: m\n  transformer: {hidden: sixty, layers: 2, heads: 4, ffn: 8}\n",
       {"model.transformer.hidden", "expected an integer"}},
      {"name: x\nmodel: {name: m, transformer: {hidden: 64, layers: 2, heads: 4, ffn: 8}}\n"
       "optimizer:\n  lr: -0.1\n",
       {"bad.yaml:4:", "optimizer.lr", ">= 0"}},
      {"name: x\nmodel: {name: m, transformer: {hidden: 64, layers: 2, heads: 4, ffn: 8}}\n"
       "optimizer:\n  ns: {steps: 0}\n",
       {"optimizer.ns.steps", "[1, 99]"}},
      {"name: x\nmodel: {name: m, transformer: {hidden: 64, layers: 2, heads: 4, ffn: 8}}\n"
       "optimizer:\n  ns: {steps: 100}\n",
       {"optimizer.ns.steps", "[1, 99]"}},
      {"name: x\nmodel: {name: m, transformer: {hidden: 64, layers: 2, heads: 4, ffn: 8}}\n"
       "optimizer:\n  preset: adam\n",
       {"bad.yaml:4:", "optimizer.preset", "unknown preset 'adam'"}},
      {"name: x\nmodel: {name: m, transformer: {hidden: 64, layers: 2, heads: 4, ffn: 8}}\n"
       "optimizer:\n  ns: {coefficients: polar}\n",
       {"optimizer.ns.coefficients", "unknown coefficient schedule 'polar'"}},
      {"name: x\nmodel: {name: m, transformer: {hidden: 64, layers: 2, heads: 4, ffn: 8}}\n"
       "optimizer:\n  ns: {coefficients: [[1, 2]]}\n",
       {"optimizer.ns.coefficients[0]", "expected [a, b, c]"}},
      {"name: x\nmodel: {name: m, transformer: {hidden: 64, layers: 2, heads: 4, ffn: 8}}\n"
       "optimizer:\n  preset: dmuon\n  ns: {steps: 2}\n",
       {"optimizer.ns.restarts", "outside [1, steps-1]"}},
      {"name: x\nmodel: {name: m, transformer: {hidden: 64, layers: 2, heads: 4, ffn: 8}}\n"
       "optimizer:\n  momentum: 1.5\n",
       {"optimizer.momentum", "[0, 1)"}},
      {"name: x\nmodel: {name: m, transformer: {hidden: 64, layers: 2, heads: 4, ffn: 8}}\n"
       "optimizer:\n  nesterov: maybe\n",
       {"optimizer.nesterov", "expected true or false"}},
      {"name: x\nmodel: {name: m, transformer: {hidden: 64, layers: 2, heads: 4, ffn: 8}}\n"
       "strategies: [dedicated, zero3]\n",
       {"bad.yaml:3:", "strategies[1]", "unknown strategy 'zero3'"}},
      {"name: x\nmodel: {name: m, transformer: {hidden: 64, layers: 2, heads: 4, ffn: 8}}\n"
       "cluster: {nodes: 0}\n",
       {"cluster.nodes", "must be > 0"}},
      {"name: x\nmodel: {name: m, transformer: {hidden: 64, layers: 2, heads: 4, ffn: 8}}\n"
       "cluster: {gpus_per_node: 8, nic: 400}\n",
       {"cluster.nic", "unknown key"}},
      {"name: x\nmodel: {name: m, params: [{name: w, shape: [4, 0]}]}\n",
       {"model.params[0].shape[1]", "must be > 0"}},
      {"name: x\nmodel: {name: m, params: [{name: w, shape: [4, 4], dtype: int8}]}\n",
       {"model.params[0].dtype", "unknown dtype 'int8'"}},
      {"name: x\nmodel: {name: m, params: [{name: w, shape: [4, 4]}, {name: w, shape: [2]}]}\n",
       {"duplicate parameter name 'w'"}},
      {"name: x\nmodel: no-such-model.yaml\n", {"bad.yaml:2:", "does not exist"}},
      {"name: x\nmodel: {name: m, transformer: {hidden: 64, layers: 2, heads: 4, ffn: 8}}\n"
       "routing: {adamw: ['*.nothing']}\n",
       {"bad.yaml:3:", "routing.adamw[0]", "matches no parameter"}},
      {"name: x\nmodel: {name: m, transformer: {hidden: 64, layers: 2, heads: 3, ffn: 8}}\n",
       {"model.transformer.head_dim", "not a multiple"}},
      {"name: [unclosed\n", {"bad.yaml:", "not valid YAML"}},
      {"model: {name: m, transformer: {hidden: 64, layers: 2, heads: 4, ffn: 8}}\n",
       {"missing required key 'name'"}},
      {"- just\n- a list\n", {"expected a mapping"}},
  };
  for (const auto& c : cases) {
    const std::string message = error_of(c.text);
    INFO("input:\n" << c.text << "message: " << message);
    for (const auto& want : c.expected) CHECK(message.find(want) != std::string::npos);
    // One line, no stack of messages.
    CHECK(message.find('\n') == std::string::npos);
  }
}
