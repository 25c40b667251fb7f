// Fused momentum, Muon update and multi-tensor AdamW against reference/elementwise_steps.
// Skips (tests/gpu_skip.hpp) without a GPU.
#include <cstring>
#include <iostream>
#include <vector>

#include "catch_compat.hpp"
#include "gpu_skip.hpp"
#include "harness/verify/gpu_ns.hpp"
#include "harness/verify/test_matrices.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/device_query.hpp"
#include "kernels/cuda/elementwise.hpp"
#include "reference/elementwise_steps.hpp"

using namespace dmuon;

namespace {

// Values of a host vector as stored in `dtype` (what the kernel reads), and a device copy.
struct Tensor {
  std::vector<double> host;
  cuda::DeviceBuffer device;
  DType dtype;
  Tensor(const std::vector<double>& values, DType d) : dtype(d) {
    Eigen::MatrixXd m = Eigen::Map<const Eigen::MatrixXd>(values.data(), 1, static_cast<long>(values.size()));
    const auto bytes = verify::to_device_bytes({m}, d);
    device = cuda::DeviceBuffer(bytes.size(), "test tensor");
    device.upload(bytes.data(), bytes.size());
    const auto back = verify::from_device_bytes(bytes, d, 1, static_cast<long>(values.size()), 1)[0];
    host.assign(back.data(), back.data() + back.size());
  }
  std::vector<double> read() const {
    std::vector<std::uint8_t> bytes(device.bytes());
    device.download(bytes.data(), bytes.size());
    const auto m = verify::from_device_bytes(bytes, dtype, 1, static_cast<long>(host.size()), 1)[0];
    return {m.data(), m.data() + m.size()};
  }
};

std::vector<double> random(long n, std::uint64_t seed, double scale = 1.0) {
  const Eigen::MatrixXd m = verify::gaussian_matrix(1, n, seed) * scale;
  return {m.data(), m.data() + m.size()};
}

// max |got - want| / max |want|: fp32 arithmetic lands within a few ulps of the largest value.
double max_rel(const std::vector<double>& got, const std::vector<double>& want) {
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return worst / scale;
}

}  // namespace

TEST_CASE("GPU momentum: ema and sum forms, Nesterov on and off", "[gpu]") {
  if (skip_without_gpu()) return;
  const long n = 100003;  // odd: no vector-width assumption
  for (MomentumForm form : {MomentumForm::ema, MomentumForm::sum}) {
    for (bool nesterov : {true, false}) {
      MuonConfig cfg;
      cfg.momentum_form = form;
      cfg.nesterov = nesterov;
      Tensor grad(random(n, 1), DType::bf16), mom(random(n, 2, 0.1), DType::fp32), u(std::vector<double>(n), DType::fp32);
      cuda::momentum_update(grad.device.get(), DType::bf16, mom.device.as<float>(), u.device.get(), DType::fp32, n,
                            cfg, nullptr);
      cuda::synchronize(nullptr);
      std::vector<double> m_ref = mom.host, u_ref(n);
      ref::momentum_elementwise(grad.host.data(), m_ref.data(), u_ref.data(), n, cfg, ref::Rounding::emulate);
      INFO("form " << to_string(form) << " nesterov " << nesterov);
      CHECK(max_rel(mom.read(), m_ref) < 1e-5);
      CHECK(max_rel(u.read(), u_ref) < 1e-5);
    }
  }
}

TEST_CASE("GPU Muon update: decay with the base lr, scaled add, bf16 copy-out", "[gpu]") {
  if (skip_without_gpu()) return;
  const long n = 65537;
  MuonConfig cfg;
  cfg.lr = 0.02;
  cfg.weight_decay = 0.1;
  const double lr_adj = 0.02 * 1.7;
  Tensor w(random(n, 3), DType::fp32), o(random(n, 4), DType::fp16), copy(std::vector<double>(n), DType::bf16);
  cuda::muon_update(w.device.as<float>(), o.device.get(), DType::fp16, n, cfg.lr, cfg.weight_decay, lr_adj,
                    copy.device.get(), nullptr);
  cuda::synchronize(nullptr);
  std::vector<double> w_ref = w.host;
  ref::muon_update_elementwise(w_ref.data(), o.host.data(), n, lr_adj, cfg, ref::Rounding::emulate);
  const auto got = w.read();
  CHECK(max_rel(got, w_ref) < 1e-6);
  CHECK(max_rel(copy.read(), w_ref) < 8e-3);  // bf16 copy: one rounding
}

// A strided member's column block (core/plan/region_runs.hpp): one pitched launch must do exactly
// what one launch per line does, and leave the elements between the lines as they were.
TEST_CASE("GPU momentum and Muon update over a pitched block equal one launch per line, bit for bit", "[gpu]") {
  if (skip_without_gpu()) return;
  const long lines = 37, width = 101, pitch = 257, n = lines * pitch;  // a 37 x 101 block of a 37 x 257 matrix
  MuonConfig cfg;
  cfg.lr = 0.02;
  cfg.weight_decay = 0.1;
  const cuda::Pitch block{width, pitch};
  Tensor grad(random(n, 11), DType::bf16);
  Tensor mom_a(random(n, 12, 0.1), DType::fp32), mom_b(random(n, 12, 0.1), DType::fp32);
  Tensor u_a(random(n, 13), DType::bf16), u_b(random(n, 13), DType::bf16);
  Tensor w_a(random(n, 14), DType::fp32), w_b(random(n, 14), DType::fp32);
  Tensor copy_a(random(n, 15), DType::bf16), copy_b(random(n, 15), DType::bf16);
  const long first = 3;  // the block starts a few columns in
  auto at = [](const Tensor& t, long i) { return static_cast<char*>(t.device.get()) + i * bytes_per_element(t.dtype); };
  cuda::momentum_update(at(grad, first), DType::bf16, reinterpret_cast<float*>(at(mom_a, first)), at(u_a, first), DType::bf16,
                        lines * width, cfg, nullptr, nullptr, block);
  cuda::muon_update(reinterpret_cast<float*>(at(w_a, first)), at(u_a, first), DType::bf16, lines * width, cfg.lr,
                    cfg.weight_decay, 0.05, at(copy_a, first), nullptr, block);
  for (long l = 0; l < lines; ++l) {
    const long o = first + l * pitch;
    cuda::momentum_update(at(grad, o), DType::bf16, reinterpret_cast<float*>(at(mom_b, o)), at(u_b, o), DType::bf16, width,
                          cfg, nullptr);
  }
  for (long l = 0; l < lines; ++l) {
    const long o = first + l * pitch;
    cuda::muon_update(reinterpret_cast<float*>(at(w_b, o)), at(u_b, o), DType::bf16, width, cfg.lr, cfg.weight_decay, 0.05,
                      at(copy_b, o), nullptr);
  }
  cuda::synchronize(nullptr);
  const std::vector<double> ma = mom_a.read(), mb = mom_b.read(), ua = u_a.read(), ub = u_b.read(), wa = w_a.read(),
                            wb = w_b.read(), ca = copy_a.read(), cb = copy_b.read();
  long changed = 0, mismatched = 0, outside_touched = 0;
  for (long i = 0; i < n; ++i) {
    const long column = (i - first) % pitch;
    const bool inside = i >= first && i < first + lines * pitch && column < width;
    if (ma[i] != mb[i] || ua[i] != ub[i] || wa[i] != wb[i] || ca[i] != cb[i]) ++mismatched;
    if (inside && wa[i] != w_a.host[i]) ++changed;
    if (!inside && (ma[i] != mom_a.host[i] || ua[i] != u_a.host[i] || wa[i] != w_a.host[i] || ca[i] != copy_a.host[i])) {
      ++outside_touched;
    }
  }
  CHECK(mismatched == 0);
  CHECK(outside_touched == 0);
  CHECK(changed > lines * width / 2);  // the block really was updated
  CHECK_THROWS_WITH(cuda::momentum_update(at(grad, 0), DType::bf16, mom_a.device.as<float>(), u_a.device.get(), DType::bf16,
                                          width + 1, cfg, nullptr, nullptr, block),
                    Catch::Contains("not whole lines"));
}

TEST_CASE("GPU multi-tensor AdamW over more tensors than one launch holds", "[gpu]") {
  if (skip_without_gpu()) return;
  AdamWConfig cfg;
  cfg.lr = 1e-3;
  cfg.beta2 = 0.95;
  cfg.weight_decay = 0.1;
  std::vector<Tensor> w, g, m, v;
  std::vector<cuda::AdamWTensor> list;
  const int count = 45;  // > 40 per launch
  for (int i = 0; i < count; ++i) {
    const long n = 1 + 997 * i;
    w.emplace_back(random(n, 10 + i), DType::fp32);
    g.emplace_back(random(n, 100 + i), DType::bf16);
    m.emplace_back(std::vector<double>(n), DType::fp32);
    v.emplace_back(std::vector<double>(n), DType::fp32);
  }
  for (int i = 0; i < count; ++i) {
    list.push_back({w[i].device.as<float>(), g[i].device.get(), m[i].device.as<float>(), v[i].device.as<float>(),
                    nullptr, static_cast<std::int64_t>(w[i].host.size())});
  }
  for (long step = 1; step <= 2; ++step) cuda::adamw_multi_tensor(list, DType::bf16, step, cfg, nullptr);
  cuda::synchronize(nullptr);
  for (int i = 0; i < count; ++i) {
    std::vector<double> wr = w[i].host, mr = m[i].host, vr = v[i].host;
    for (long step = 1; step <= 2; ++step) {
      ref::adamw_elementwise(wr.data(), g[i].host.data(), mr.data(), vr.data(), static_cast<long>(wr.size()), step,
                             cfg, ref::Rounding::emulate);
    }
    INFO("tensor " << i);
    CHECK(max_rel(w[i].read(), wr) < 1e-5);
    CHECK(max_rel(m[i].read(), mr) < 1e-5);
    CHECK(max_rel(v[i].read(), vr) < 1e-5);
  }
}

TEST_CASE("GPU momentum and AdamW leave NaN/Inf gradient elements unapplied and count them", "[gpu]") {
  if (skip_without_gpu()) return;
  const long n = 4099;
  std::vector<double> g = random(n, 21);
  const std::vector<long> bad = {0, 17, 4098};
  g[0] = std::nan("");
  g[17] = INFINITY;
  g[4098] = -INFINITY;
  cuda::DeviceBuffer counters(2 * sizeof(unsigned), "counters");
  const unsigned zero[2] = {0, 0};
  counters.upload(zero, sizeof zero);
  unsigned* count = counters.as<unsigned>();

  MuonConfig mc;
  Tensor grad(g, DType::bf16), mom(random(n, 22, 0.1), DType::fp32), u(std::vector<double>(n), DType::fp32);
  cuda::momentum_update(grad.device.get(), DType::bf16, mom.device.as<float>(), u.device.get(), DType::fp32, n, mc,
                        nullptr, count);
  AdamWConfig ac;
  ac.weight_decay = 0.1;
  Tensor w(random(n, 23), DType::fp32), m(random(n, 24, 0.01), DType::fp32), v(random(n, 25, 0.0), DType::fp32);
  cuda::AdamWTensor t{w.device.as<float>(), grad.device.get(), m.device.as<float>(), v.device.as<float>(), nullptr, n,
                      count + 1};
  cuda::adamw_multi_tensor({t}, DType::bf16, 1, ac, nullptr);
  cuda::synchronize(nullptr);

  unsigned counted[2] = {0, 0};
  counters.download(counted, sizeof counted);
  CHECK(counted[0] == 3);
  CHECK(counted[1] == 3);
  // Finite elements as the reference computes them; the three bad ones exactly as they were.
  std::vector<double> m_ref = mom.host, u_ref(n), w_ref = w.host, am_ref = m.host, av_ref = v.host;
  std::vector<double> g_ok = grad.host;
  for (long i : bad) g_ok[i] = 0;
  ref::momentum_elementwise(g_ok.data(), m_ref.data(), u_ref.data(), n, mc, ref::Rounding::emulate);
  ref::adamw_elementwise(w_ref.data(), g_ok.data(), am_ref.data(), av_ref.data(), n, 1, ac, ref::Rounding::emulate);
  const auto mom_got = mom.read(), u_got = u.read(), w_got = w.read(), m_got = m.read(), v_got = v.read();
  for (long i : bad) {
    INFO("element " << i);
    CHECK(mom_got[i] == mom.host[i]);
    CHECK(u_got[i] == mom.host[i]);
    CHECK(w_got[i] == w.host[i]);
    CHECK(m_got[i] == m.host[i]);
    CHECK(v_got[i] == v.host[i]);
    m_ref[i] = mom.host[i];
    u_ref[i] = mom.host[i];
    w_ref[i] = w.host[i];
    am_ref[i] = m.host[i];
    av_ref[i] = v.host[i];
  }
  CHECK(max_rel(mom_got, m_ref) < 1e-5);
  CHECK(max_rel(u_got, u_ref) < 1e-5);
  CHECK(max_rel(w_got, w_ref) < 1e-5);
  CHECK(max_rel(m_got, am_ref) < 1e-5);
  CHECK(max_rel(v_got, av_ref) < 1e-5);
}
