#include "harness/dmuon_bench_step_report.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/io/chrome_trace.hpp"
#include "core/error.hpp"
#include "core/cost/plan_cost.hpp"
#include "core/io/provenance.hpp"
#include "core/median.hpp"

namespace dmuon::bench {

namespace {

double imbalance(const std::vector<double>& per_rank) {
  double mean = 0, top = 0;
  for (double x : per_rank) {
    mean += x;
    top = std::max(top, x);
  }
  mean /= static_cast<double>(per_rank.size());
  return mean > 0 ? std::max(0.0, (top - mean) / mean) : 0;
}

double ns_seconds(const exec::RunTiming& t, const std::vector<Op>& ops) {
  double s = 0;
  for (const exec::OpSpan& span : t.spans) {
    if (span.op >= 0 && ops[static_cast<std::size_t>(span.op)].kind == OpKind::newton_schulz) s += span.end_seconds - span.start_seconds;
  }
  return s;
}

constexpr StreamKind kCompute = StreamKind::compute;
constexpr StreamKind kComm = StreamKind::comm;

std::string op_label(const Op& op) {
  return std::string(to_string(op.kind)) + (op.label.empty() ? "" : " '" + op.label + "'");
}

std::ofstream open_out(const std::string& path) {
  std::ofstream f(path);
  if (!f) throw Error("cannot write '" + path + "'");
  return f;
}

}  // namespace

StrategyResult summarize(const std::string& strategy, const Plan& plan, const std::vector<exec::RankMeasurement>& ranks) {
  StrategyResult r;
  r.strategy = strategy;
  const std::size_t world = ranks.size();
  const std::size_t iters = ranks.front().samples.size();
  std::vector<double> step, comm_phase, step_comm, comm_total, ns_imb, compute_imb;
  for (std::size_t i = 0; i < iters; ++i) {
    double s = 0, c = 0, sc = 0, ct = 0;
    std::vector<double> ns(world), compute(world);
    for (std::size_t k = 0; k < world; ++k) {
      const auto& sample = ranks[k].samples.at(i);
      const double opt_comm = exec::busy_seconds(sample.optimizer.spans, &kComm);
      s = std::max(s, sample.optimizer.seconds);
      c = std::max(c, sample.comm_phase.seconds);
      sc = std::max(sc, opt_comm);
      ct = std::max(ct, exec::busy_seconds(sample.comm_phase.spans, &kComm) + opt_comm);
      ns[k] = ns_seconds(sample.optimizer, plan.ranks[k]);
      compute[k] = exec::busy_seconds(sample.optimizer.spans, &kCompute);
    }
    step.push_back(s);
    comm_phase.push_back(c);
    step_comm.push_back(sc);
    comm_total.push_back(ct);
    ns_imb.push_back(imbalance(ns));
    compute_imb.push_back(imbalance(compute));
  }
  r.step_seconds = median(step);
  r.step_seconds_samples = step;
  r.comm_phase_seconds = median(comm_phase);
  r.step_comm_seconds = median(step_comm);
  r.comm_seconds_per_step = median(comm_total);
  r.ns_imbalance_measured = median(ns_imb);
  r.compute_imbalance_measured = median(compute_imb);
  const Phase fwd = Phase::forward, bwd = Phase::backward, opt = Phase::optimizer;
  for (std::size_t k = 0; k < world; ++k) {
    RankSummary s;
    std::vector<double> cb, mb, idle, nsb, cp;
    for (std::size_t i = 0; i < iters; ++i) {
      const auto& sample = ranks[k].samples[i];
      cb.push_back(exec::busy_seconds(sample.optimizer.spans, &kCompute));
      mb.push_back(exec::busy_seconds(sample.optimizer.spans, &kComm));
      idle.push_back(std::max(0.0, step[i] - exec::busy_seconds(sample.optimizer.spans, nullptr)));
      nsb.push_back(ns_seconds(sample.optimizer, plan.ranks[k]));
      cp.push_back(sample.comm_phase.seconds);
    }
    s.compute_busy_seconds = median(cb);
    s.comm_busy_seconds = median(mb);
    s.idle_seconds = median(idle);
    s.ns_busy_seconds = median(nsb);
    s.comm_phase_seconds = median(cp);
    const int rank = static_cast<int>(k);
    s.payload_bytes_forward = collective_payload_bytes(plan, rank, &fwd);
    s.payload_bytes_backward = collective_payload_bytes(plan, rank, &bwd);
    s.payload_bytes_optimizer = collective_payload_bytes(plan, rank, &opt);
    s.allocated_bytes = ranks[k].allocated_bytes;
    s.staged_ns_calls = ranks[k].staged_ns_calls;
    r.ranks.push_back(s);
    r.trace_comm_phase.push_back(ranks[k].samples.back().comm_phase.spans);
    r.trace_optimizer.push_back(ranks[k].samples.back().optimizer.spans);
    r.trace_whole_step.push_back(ranks[k].samples.back().whole_step.spans);
    std::vector<std::string> labels;
    for (const Op& op : plan.ranks[k]) labels.push_back(op_label(op));
    r.op_labels.push_back(std::move(labels));
  }
  if (ranks.front().standin) r.standin = summarize_standin(ranks);
  return r;
}

namespace {

const StrategyResult* find(const StepReport& report, const std::string& name) {
  for (const auto& s : report.strategies) {
    if (s.strategy == name) return &s;
  }
  return nullptr;
}

double total_payload(const StrategyResult& s, bool optimizer_too) {
  double top = 0;
  for (const auto& r : s.ranks) {
    top = std::max(top, r.payload_bytes_forward + r.payload_bytes_backward + (optimizer_too ? r.payload_bytes_optimizer : 0));
  }
  return top;
}

}  // namespace

void write_json(const StepReport& report, const std::string& path) {
  nlohmann::json j;
  j["machine"] = report.machine;
  j["gpu"] = report.gpu;
  j["world"] = report.world;
  j["scenario"] = report.scenario;
  j.update(provenance_json(report.command, report.date));
  j["launcher"] = report.launcher;
  j["iterations"] = report.iterations;
  j["warmup"] = report.warmup;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& s : report.strategies) {
    nlohmann::json x;
    x["strategy"] = s.strategy;
    if (s.standin) {
      add_standin_json(x, *s.standin);
      x["payload_bytes_per_step_max_rank"] = total_payload(s, true);
      list.push_back(x);
      continue;
    }
    x["optimizer_step_seconds_median"] = s.step_seconds;
    x["optimizer_step_seconds_samples"] = s.step_seconds_samples;
    x["fwd_bwd_comm_seconds_median"] = s.comm_phase_seconds;
    x["optimizer_step_comm_seconds_median"] = s.step_comm_seconds;
    x["comm_seconds_per_step_median"] = s.comm_seconds_per_step;
    x["payload_bytes_per_step_max_rank"] = total_payload(s, true);
    x["ns_imbalance_measured"] = s.ns_imbalance_measured;
    x["compute_imbalance_measured"] = s.compute_imbalance_measured;
    if (s.ns_imbalance_predicted) x["ns_imbalance_predicted"] = *s.ns_imbalance_predicted;
    nlohmann::json ranks = nlohmann::json::array();
    for (std::size_t k = 0; k < s.ranks.size(); ++k) {
      const RankSummary& r = s.ranks[k];
      ranks.push_back({{"rank", k},
                       {"compute_busy_seconds", r.compute_busy_seconds},
                       {"comm_busy_seconds", r.comm_busy_seconds},
                       {"idle_seconds", r.idle_seconds},
                       {"ns_busy_seconds", r.ns_busy_seconds},
                       {"fwd_bwd_comm_seconds", r.comm_phase_seconds},
                       {"payload_bytes_forward", r.payload_bytes_forward},
                       {"payload_bytes_backward", r.payload_bytes_backward},
                       {"payload_bytes_optimizer", r.payload_bytes_optimizer},
                       {"allocated_bytes", r.allocated_bytes},
                       {"staged_ns_calls", r.staged_ns_calls}});
    }
    x["ranks"] = ranks;
    list.push_back(x);
  }
  j["strategies"] = list;
  const StrategyResult* ded = find(report, "dedicated");
  const StrategyResult* ddp = find(report, "ddp-redundant");
  const StrategyResult* fsdp = find(report, "adamw");
  if (ded && ddp && ded->step_seconds > 0) {
    j["dedicated_vs_ddp_redundant_speedup"] = ddp->step_seconds / ded->step_seconds;
    j["dedicated_vs_ddp_redundant_speedup_with_comm"] =
        (ddp->step_seconds + ddp->comm_phase_seconds) / (ded->step_seconds + ded->comm_phase_seconds);
  }
  if (ded && fsdp) {
    j["dedicated_payload_bytes_per_step"] = total_payload(*ded, true);
    j["fsdp2_payload_bytes_per_step"] = total_payload(*fsdp, true);
    j["dedicated_traffic_not_above_fsdp2"] = total_payload(*ded, true) <= total_payload(*fsdp, true);
  }
  open_out(path) << j.dump(2) << "\n";
}

void write_markdown(const StepReport& report, const std::string& path) {
  std::ofstream f = open_out(path);
  f << std::fixed;
  const bool standin = std::any_of(report.strategies.begin(), report.strategies.end(), [](const auto& s) { return s.standin.has_value(); });
  f << (standin ? "# Training step (compute stand-in) on " : "# Optimizer step on ") << report.machine << " (" << report.world
    << " x " << report.gpu << ")\n\n";
  f << "- command: `" << report.command << "`\n- date: " << report.date << "\n- scenario: `" << report.scenario << "`\n";
  f << "- launcher: " << report.launcher << "; " << report.warmup << " warm-up + " << report.iterations
    << " measured iterations; times from CUDA events, median over iterations of the slowest rank.\n";
  if (standin) return write_standin_markdown(f, report.strategies);
  f << "- the forward/backward collectives run alone (no model compute), then a barrier, then the optimizer step.\n\n";
  f << "| strategy | optimizer step ms | fwd+bwd comm ms | comm inside step ms | comm per step ms | payload MB/step (max rank) | NS imbalance measured | predicted |\n";
  f << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const auto& s : report.strategies) {
    f << "| " << s.strategy << " | " << std::setprecision(2) << s.step_seconds * 1e3 << " | " << s.comm_phase_seconds * 1e3
      << " | " << s.step_comm_seconds * 1e3 << " | " << s.comm_seconds_per_step * 1e3 << " | " << std::setprecision(1)
      << total_payload(s, true) / 1e6 << " | " << std::setprecision(3) << s.ns_imbalance_measured << " | "
      << (s.ns_imbalance_predicted ? std::to_string(*s.ns_imbalance_predicted).substr(0, 5) : "-") << " |\n";
  }
  f << "\nPer rank (optimizer step, medians):\n\n| strategy | rank | compute busy ms | comm busy ms | idle ms | NS ms | fwd+bwd comm ms | GiB allocated |\n";
  f << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const auto& s : report.strategies) {
    for (std::size_t k = 0; k < s.ranks.size(); ++k) {
      const RankSummary& r = s.ranks[k];
      f << "| " << s.strategy << " | " << k << " | " << std::setprecision(2) << r.compute_busy_seconds * 1e3 << " | "
        << r.comm_busy_seconds * 1e3 << " | " << r.idle_seconds * 1e3 << " | " << r.ns_busy_seconds * 1e3 << " | "
        << r.comm_phase_seconds * 1e3 << " | " << r.allocated_bytes / (1024.0 * 1024 * 1024) << " |\n";
    }
  }
  const StrategyResult* ded = find(report, "dedicated");
  const StrategyResult* ddp = find(report, "ddp-redundant");
  const StrategyResult* fsdp = find(report, "adamw");
  f << "\n";
  if (ded && ddp) {
    f << "dedicated_vs_ddp_redundant_speedup (optimizer step): **" << std::setprecision(2)
      << ddp->step_seconds / ded->step_seconds << "x**"
      << (report.world > 1 ? " (target >= 1.8x on 2 x H200)" : " (one GPU: the batching gain alone; no owners to share)") << ".\n\n";
  }
  if (ded && fsdp) {
    f << "Per-step payload, dedicated: " << std::setprecision(1) << total_payload(*ded, true) / 1e6
      << " MB; FSDP2 (all-gather + reduce-scatter): " << total_payload(*fsdp, true) / 1e6 << " MB ("
      << (total_payload(*ded, true) <= total_payload(*fsdp, true) ? "not above" : "ABOVE") << " FSDP2's).\n";
  }
}

void write_chrome_trace(const StepReport& report, const std::string& path) {
  ChromeTrace trace(path, "dmuon-bench step: trace");
  for (std::size_t si = 0; si < report.strategies.size(); ++si) {
    const StrategyResult& s = report.strategies[si];
    double offset = 0;  // the optimizer run starts after the slowest rank's comm phase
    for (const auto& spans : s.trace_comm_phase) {
      for (const auto& sp : spans) offset = std::max(offset, sp.end_seconds);
    }
    for (std::size_t k = 0; k < s.ranks.size(); ++k) {
      const int pid = static_cast<int>(si * 100 + k);
      trace.process_name(pid, s.strategy + " rank " + std::to_string(k));
      for (int tid : {0, 1}) trace.thread_name(pid, tid, tid == 0 ? "compute stream" : "comm stream");
      auto add = [&](const std::vector<exec::OpSpan>& spans, double base, const char* phase) {
        for (const auto& sp : spans) {
          std::string name = sp.op < 0 ? standin_span_name(sp) : s.op_labels[k][static_cast<std::size_t>(sp.op)];
          if (sp.fused_ops > 1) name += " +" + std::to_string(sp.fused_ops - 1) + " fused";
          trace.complete(name, phase, pid, sp.stream == StreamKind::compute ? 0 : 1, (base + sp.start_seconds) * 1e6,
                         (sp.end_seconds - sp.start_seconds) * 1e6, {{"op", sp.op}});
        }
      };
      add(s.trace_comm_phase[k], 0, "fwd+bwd comm");
      add(s.trace_optimizer[k], offset, "optimizer");
      add(s.trace_whole_step[k], 0, "whole step (compute stand-in)");
    }
  }
  nlohmann::json other = provenance_json(report.command, report.date);
  other.update({{"machine", report.machine},
                {"note", "one measured iteration per strategy; each rank's times from its own CUDA events, "
                         "aligned at the barrier before each phase"}});
  trace.finish(other);
}

}  // namespace dmuon::bench
