#include "core/cost/host_paced.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"

namespace dmuon {

std::vector<PacedTime> host_paced(const std::vector<PacedUnit>& units) {
  std::vector<PacedTime> out;
  out.reserve(units.size());
  double issued = 0, done = 0;  // I_k and C_{k-1}
  for (std::size_t k = 0; k < units.size(); ++k) {
    const PacedUnit& u = units[k];
    if (!(u.gpu_s >= 0) || !(u.host_s >= 0) || !std::isfinite(u.gpu_s) || !std::isfinite(u.host_s)) {
      throw Error("host_paced: unit " + std::to_string(k) + ": times must be finite and >= 0");
    }
    const double gpu_end = done + u.gpu_s;  // done >= issued: the unit before ended after its issue
    const double host_end = issued + u.host_s;
    PacedTime t;
    if (host_end > gpu_end) {
      t.seconds = host_end - done, t.waited = t.seconds > u.gpu_s;
      if (!t.waited) t.seconds = u.gpu_s;
      done = host_end;
    } else {
      t.seconds = u.gpu_s;  // the GPU was the bottleneck: its own time, bit for bit
      done = gpu_end;
    }
    issued += u.host_s;
    out.push_back(t);
  }
  return out;
}

}  // namespace dmuon
