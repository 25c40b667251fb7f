#include "harness/verify/gpu_sharded_ns.hpp"

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "harness/verify/gpu_ns.hpp"
#include "kernels/cuda/device_buffer.hpp"

namespace dmuon::verify {
namespace {

// The group's collectives over k host threads, one per member: every member calls them with its
// device buffer in the same order (the engine's program is the same on all of them).
class HostGroup {
 public:
  explicit HostGroup(int k) : parts_(static_cast<std::size_t>(k)) {}

  // Sum all-reduce, the sum taken in member order in double, stored once as T.
  template <class T>
  void all_reduce(int member, T* device, long n, cuda::Stream stream) {
    cuda::synchronize(stream);  // the partial is complete
    std::vector<T> raw(static_cast<std::size_t>(n));
    cuda::copy_to_host(raw.data(), device, raw.size() * sizeof(T));
    std::vector<double> mine(raw.begin(), raw.end());
    const auto all = exchange(member, bytes_of(mine));
    std::vector<double> sum(raw.size(), 0.0);
    for (const auto& part : all) {
      const auto* p = reinterpret_cast<const double*>(part.data());
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += p[i];
    }
    for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<T>(sum[i]);  // fp32: one rounding
    cuda::copy_to_device(device, raw.data(), raw.size() * sizeof(T));
  }

  // In-place all-gather of 16-bit elements: member p's `each` elements at blocks + p * each.
  void all_gather(int member, void* blocks, long each, cuda::Stream stream) {
    cuda::synchronize(stream);
    const std::size_t bytes = 2 * static_cast<std::size_t>(each);
    char* base = static_cast<char*>(blocks);
    std::vector<std::uint8_t> mine(bytes);
    cuda::copy_to_host(mine.data(), base + member * bytes, bytes);
    const auto all = exchange(member, std::move(mine));
    for (std::size_t p = 0; p < all.size(); ++p) cuda::copy_to_device(base + p * bytes, all[p].data(), bytes);
    if (member == 0) ++gathers_;
  }

  int gathers() const { return gathers_; }

  // Unblocks the others when a member fails (they then throw too instead of waiting forever).
  void abort() {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
    changed_.notify_all();
  }

 private:
  static std::vector<std::uint8_t> bytes_of(const std::vector<double>& v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(v.data());
    return std::vector<std::uint8_t>(p, p + v.size() * sizeof(double));
  }

  // Leaves with every member's part, in member order; a barrier with a generation count.
  std::vector<std::vector<std::uint8_t>> exchange(int member, std::vector<std::uint8_t> mine) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (aborted_) throw Error("another member failed");
    parts_[static_cast<std::size_t>(member)] = std::move(mine);
    const long generation = generation_;
    if (++arrived_ == static_cast<int>(parts_.size())) {
      all_ = parts_;
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return generation_ != generation || aborted_; });
      if (aborted_) throw Error("another member failed");
    }
    return all_;
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::vector<std::uint8_t>> parts_, all_;
  int arrived_ = 0;
  long generation_ = 0;
  bool aborted_ = false;
  int gathers_ = 0;  // by member 0 alone: one per all-gather
};

}  // namespace

std::vector<Eigen::MatrixXd> gpu_sharded_newton_schulz(const std::vector<Eigen::MatrixXd>& blocks, const NsConfig& ns,
                                                       cuda::NsImpl impl, DType in_dtype, bool column_major,
                                                       bool split_products, int* gathers) {
  const int k = static_cast<int>(blocks.size());
  if (k == 0) throw Error("gpu_sharded_newton_schulz: no blocks");
  HostGroup reduce(k);
  std::vector<Eigen::MatrixXd> out(blocks.size());
  std::vector<std::string> errors(blocks.size());
  std::vector<std::thread> threads;
  for (int j = 0; j < k; ++j) {
    threads.emplace_back([&, j] {
      const auto at = static_cast<std::size_t>(j);
      try {
        const Eigen::MatrixXd& x = blocks[at];
        // Row-major bytes of X_j^T are X_j column-major.
        const Eigen::MatrixXd stored = column_major ? Eigen::MatrixXd(x.transpose()) : x;
        const auto in_bytes = to_device_bytes({stored}, in_dtype);
        cuda::NsEngine engine;
        cuda::DeviceBuffer in(in_bytes.size(), "sharded NS input");
        in.upload(in_bytes.data(), in_bytes.size());
        const std::size_t out_bytes = static_cast<std::size_t>(bytes_per_element(ns.compute_dtype) * x.size());
        cuda::DeviceBuffer result(out_bytes, "sharded NS output");
        cuda::NsShardCall call;
        call.m = static_cast<long>(x.rows());
        call.columns = static_cast<long>(x.cols());
        call.column_major = column_major;
        call.in_dtype = in_dtype;
        call.in = in.get();
        call.out = result.get();
        call.name = "member " + std::to_string(j);
        if (split_products) {
          call.product_members = k;
          call.position = j;
        }
        cuda::NsShardReduce r;
        r.norm = [&reduce, j](double* p, cuda::Stream s) { reduce.all_reduce(j, p, 1, s); };
        r.gram = [&reduce, j](float* p, long n, cuda::Stream s) { reduce.all_reduce(j, p, n, s); };
        r.gather = [&reduce, j](void* p, long each, cuda::Stream s) { reduce.all_gather(j, p, each, s); };
        engine.run_sharded(call, ns, impl, r);
        cuda::synchronize(engine.stream());
        std::vector<std::uint8_t> host(out_bytes);
        result.download(host.data(), host.size());
        const Eigen::MatrixXd got = from_device_bytes(host, ns.compute_dtype, stored.rows(), stored.cols(), 1).front();
        out[at] = column_major ? Eigen::MatrixXd(got.transpose()) : got;
      } catch (const std::exception& e) {
        errors[at] = e.what();
        reduce.abort();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (gathers) *gathers = reduce.gathers();
  // The cause first, not the echo of the members it stopped.
  for (const bool echoes : {false, true}) {
    for (int j = 0; j < k; ++j) {
      const std::string& e = errors[static_cast<std::size_t>(j)];
      if (e.empty() || (!echoes && e == "another member failed")) continue;
      throw Error("gpu_sharded_newton_schulz: member " + std::to_string(j) + ": " + e);
    }
  }
  return out;
}

}  // namespace dmuon::verify
