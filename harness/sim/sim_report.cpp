#include "harness/sim/sim_report.hpp"

#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/io/provenance.hpp"
#include "core/plan/step_planner.hpp"

namespace dmuon::simcli {
namespace {


const sim::StrategyResult* find(const ScenarioRun& run, Strategy s) {
  for (const auto& row : run.rows) {
    if (row.strategy == s && row.result) return &*row.result;
  }
  return nullptr;
}

std::string ms(double s) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1) << s * 1e3;
  return o.str();
}

std::ofstream open_out(const std::string& file, const char* flag) {
  std::ofstream out(file);
  if (!out) throw Error(std::string(flag) + ": cannot write '" + file + "'");
  return out;
}

// Per strategy, what share of the predicted time came from each source (StrategyResult::
// source_shares): the reader sees how much of a figure rests on measurements.
void print_source_shares(std::ostream& out, const ScenarioRun& run) {
  out << "share of predicted time by source, on the GPU that ends last (measured / interpolated / datasheet)\n";
  for (const auto& row : run.rows) {
    if (!row.result) continue;
    const auto& s = row.result->source_shares;
    std::ostringstream line;
    line << std::fixed << std::setprecision(0);
    for (const char* key : {"measured", "interpolated", "datasheet"}) {
      const auto it = s.find(key);
      line << (key[0] == 'm' ? "" : " / ") << (it == s.end() ? 0.0 : it->second * 100) << "%";
    }
    out << "  " << std::left << std::setw(15) << to_string(row.strategy) << std::right << line.str() << "\n";
  }
}

}  // namespace

std::string with_suffix(const std::string& file, const std::string& suffix) {
  const auto slash = file.rfind('/');
  const auto dot = file.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return file + "-" + suffix;
  return file.substr(0, dot) + "-" + suffix + file.substr(dot);
}

ScenarioRun run_scenario(const Scenario& scenario, const std::vector<Strategy>& strategies, const CostModel& cost,
                         const std::vector<sim::RunOptions>& options, int parallel, const std::string& label,
                         const std::function<void(std::size_t)>& done) {
  ScenarioRun run{scenario, label, {}};
  for (auto& o : sim::run_strategies(scenario, strategies, cost, options, parallel, done)) {
    run.rows.push_back({o.strategy, std::move(o.result), std::move(o.error)});
  }
  return run;
}

void print_table(std::ostream& out, const ScenarioRun& run) {
  const auto& c = run.scenario.cluster;
  const Mesh mesh = mesh_for_cluster(c);
  out << "dmuon-sim: " << run.scenario.name << (run.label.empty() ? "" : " [" + run.label + "]") << ": " << c.nodes
      << " node(s) x " << c.gpus_per_node << " " << c.gpu << ", mesh " << mesh.to_string() << ", mode "
      << to_string(run.scenario.sim_mode) << "\n";
  out << "  " << nccl_channels_summary(c) << "\n";
  for (const auto& row : run.rows) {
    if (!row.result) continue;
    out << "  forward/backward: " << row.result->compute_source << "; optimizer compute: " << row.result->optimizer_source
        << "\n";
    break;
  }
  const sim::StrategyResult* adamw = find(run, Strategy::adamw);
  out << std::left << std::setw(15) << "strategy" << std::right << std::setw(11) << "fwd+bwd ms" << std::setw(13)
      << "exposed comm" << std::setw(13) << "optimizer ms" << std::setw(10) << "step ms" << std::setw(10) << "vs adamw"
      << std::setw(12) << "GiB/GPU" << std::setw(11) << "owner imb" << std::setw(9) << "wall s" << "\n";
  for (const auto& row : run.rows) {
    out << std::left << std::setw(15) << to_string(row.strategy) << std::right;
    if (!row.result) {
      out << "  not simulated: " << row.error << "\n";
      continue;
    }
    const auto& r = *row.result;
    std::ostringstream delta;
    if (adamw) delta << std::showpos << std::fixed << std::setprecision(1) << (r.step_s / adamw->step_s - 1) * 100 << "%";
    std::ostringstream imb, gib, wall;
    imb << std::fixed << std::setprecision(3) << r.owner_imbalance;
    gib << std::fixed << std::setprecision(1) << r.memory.total_GiB();
    wall << std::fixed << std::setprecision(2) << r.outcome.wall_s + r.plan_wall_s;
    out << std::setw(11) << ms(r.fwd_bwd_s) << std::setw(13) << ms(r.exposed_comm_s) << std::setw(13)
        << ms(r.optimizer_s) << std::setw(10) << ms(r.step_s) << std::setw(10) << (adamw ? delta.str() : "-")
        << std::setw(12) << gib.str() << std::setw(11) << imb.str() << std::setw(9) << wall.str() << "\n";
  }
  for (const auto& row : run.rows) {
    if (row.result && !row.result->plan_note.empty()) out << "  " << to_string(row.strategy) << ": " << row.result->plan_note << "\n";
  }
  print_source_shares(out, run);
}

void print_scaling_table(std::ostream& out, const std::string& key, const std::vector<ScenarioRun>& runs) {
  if (runs.empty()) return;
  // The owner strategies' overhead over adamw, the figure DMuon publishes, beside the step times.
  std::vector<Strategy> owners;
  for (const auto& row : runs.front().rows) {
    if (traits(row.strategy).ns_ranks == NsRanks::owner) owners.push_back(row.strategy);
  }
  auto delta_width = [](Strategy s) { return std::max<int>(12, static_cast<int>(to_string(s).size()) + 10); };
  out << "scaling over " << key << " (step ms; owner strategies vs adamw)\n" << std::left << std::setw(14) << key << std::right;
  for (const auto& row : runs.front().rows) out << std::setw(15) << to_string(row.strategy);
  for (Strategy s : owners) out << std::setw(delta_width(s)) << std::string(to_string(s)) + " vs adamw";
  out << "\n";
  for (const auto& run : runs) {
    out << std::left << std::setw(14) << run.label << std::right;
    for (const auto& row : run.rows) out << std::setw(15) << (row.result ? ms(row.result->step_s) : "not run");
    const auto* a = find(run, Strategy::adamw);
    for (Strategy s : owners) {
      const auto* d = find(run, s);
      std::ostringstream delta;
      if (a && d) delta << std::showpos << std::fixed << std::setprecision(1) << 100 * (d->step_s / a->step_s - 1) << "%";
      out << std::setw(delta_width(s)) << (a && d ? delta.str() : "-");
    }
    out << "\n";
  }
}

void write_json(const std::string& file, const std::vector<ScenarioRun>& runs, const std::string& command) {
  nlohmann::json j = provenance_json(command, utc_now());
  j["runs"] = nlohmann::json::array();
  for (const auto& run : runs) {
    const auto& c = run.scenario.cluster;
    nlohmann::json r = {{"scenario", run.scenario.name}, {"file", run.scenario.file}, {"sweep_value", run.label},
                        {"mode", to_string(run.scenario.sim_mode)}, {"nodes", c.nodes}, {"gpus_per_node", c.gpus_per_node},
                        {"gpu", c.gpu}, {"gpu_memory_GiB", c.gpu_memory_GiB}, {"mesh", mesh_for_cluster(c).to_string()},
                        {"nccl_channels", nccl_channels_summary(c)}};
    const auto* adamw = find(run, Strategy::adamw);
    r["strategies"] = nlohmann::json::array();
    for (const auto& row : run.rows) {
      nlohmann::json s = {{"strategy", to_string(row.strategy)}, {"simulated", row.result.has_value()}};
      if (!row.result) {
        s["error"] = row.error;
      } else {
        const auto& x = *row.result;
        s.update({{"fwd_bwd_compute_seconds", x.fwd_bwd_compute_s}, {"fwd_bwd_seconds", x.fwd_bwd_s},
                  {"exposed_comm_seconds", x.exposed_comm_s}, {"optimizer_seconds", x.optimizer_s},
                  {"step_seconds", x.step_s}, {"owner_imbalance", x.owner_imbalance},
                  {"compute_source", x.compute_source}, {"optimizer_source", x.optimizer_source},
                  {"plan_note", x.plan_note},
                  {"time_share_by_source", x.source_shares},
                  {"memory_GiB_per_gpu", {{"master", x.memory.master_bytes / kGiB}, {"grads", x.memory.grad_bytes / kGiB},
                                          {"optimizer_state", x.memory.state_bytes / kGiB},
                                          {"transient", x.memory.transient_bytes / kGiB},
                                          {"activations", x.memory.activation_bytes / kGiB},
                                          {"total", x.memory.total_bytes() / kGiB}}},
                  {"collectives", x.outcome.collectives.size()}, {"sim_wall_seconds", x.outcome.wall_s},
                  {"simulated_gpus", x.outcome.simulated_gpus},
                  {"plan_wall_seconds", x.plan_wall_s}});
        if (x.assignment_imbalance) s["assignment_imbalance"] = *x.assignment_imbalance;
        if (adamw) s["delta_vs_adamw"] = x.step_s / adamw->step_s - 1;
      }
      r["strategies"].push_back(std::move(s));
    }
    j["runs"].push_back(std::move(r));
  }
  auto out = open_out(file, "--json");
  out << j.dump(2) << "\n";
}

void write_csv(const std::string& file, const std::vector<ScenarioRun>& runs) {
  auto out = open_out(file, "--csv");
  out << "sweep_value,strategy,kind,algorithm,group,ranks,merged,phase,label,bytes,start_seconds,seconds,algbw_GBps,busbw_GBps\n";
  for (const auto& run : runs) {
    for (const auto& row : run.rows) {
      if (!row.result) continue;
      for (const auto& c : row.result->outcome.collectives) {
        std::string label = c.label;
        for (char& ch : label) ch = ch == ',' || ch == '"' ? ';' : ch;
        out << run.label << ',' << to_string(row.strategy) << ',' << c.kind << ',' << c.algorithm << ',' << c.group << ','
            << c.ranks << ',' << c.merged << ',' << c.phase << ',' << label << ',' << c.bytes << ',' << c.start_s << ','
            << c.seconds() << ',' << c.algbw_GBps() << ',' << c.busbw_GBps() << '\n';
      }
    }
  }
  if (!out) throw Error("--csv: error writing '" + file + "'");
}

}  // namespace dmuon::simcli
