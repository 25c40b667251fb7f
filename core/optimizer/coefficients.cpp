#include "core/optimizer/coefficients.hpp"

#include <cmath>

#include "core/error.hpp"

namespace dmuon {
namespace {

// Polar Express "unmodified" list (NoahAmsel/PolarExpress polar_express/basic.py); the last
// entry is the steady state (15/8, -10/8, 3/8).
const std::vector<NsCoefficient> kPolarExpressRaw = {
    {8.28721201814563, -23.595886519098837, 17.300387312530933},
    {4.107059111542203, -2.9478499167379106, 0.5448431082926601},
    {3.9486908534822946, -2.908902115962949, 0.5518191394370137},
    {3.3184196573706015, -2.488488024314874, 0.51004894012372},
    {2.300652019954817, -1.6689039845747493, 0.4188073119525673},
    {1.891301407787398, -1.2679958271945868, 0.37680408948524835},
    {1.8750014808534479, -1.2500016453999487, 0.3750001645474248},
    {1.875, -1.25, 0.375},
};

// p(x/s): a/s, b/s^3, c/s^5. Computed, as DMuon and gram-newton-schulz do, not copied rounded.
NsCoefficient scaled(const NsCoefficient& k, double s) {
  return {k.a / s, k.b / std::pow(s, 3), k.c / std::pow(s, 5)};
}

}  // namespace

std::vector<std::string> schedule_names() {
  return {"keller", "you", "polar-express", "polar-express-1.05", "polar-express-1.01"};
}

std::vector<NsCoefficient> named_schedule(std::string_view name, const std::string& what) {
  if (name == "keller") return {{3.4445, -4.7750, 2.0315}};
  if (name == "you") {
    return {{4.0848, -6.8946, 2.9270},
            {3.9505, -6.3029, 2.6377},
            {3.7418, -5.5913, 2.3037},
            {2.8769, -3.1427, 1.2046},
            {2.8366, -3.0525, 1.2012}};
  }
  if (name == "polar-express" || name == "polar-express-1.05") {
    // Gram-NS / DMuon default: the first five raw steps, every one divided by 1.05.
    std::vector<NsCoefficient> out;
    for (int i = 0; i < 5; ++i) out.push_back(scaled(kPolarExpressRaw[i], 1.05));
    return out;
  }
  if (name == "polar-express-1.01") {
    // basic.py: all eight, the first seven divided by 1.01, the steady state kept.
    std::vector<NsCoefficient> out;
    for (int i = 0; i < 7; ++i) out.push_back(scaled(kPolarExpressRaw[i], 1.01));
    out.push_back(kPolarExpressRaw[7]);
    return out;
  }
  std::string known;
  for (const auto& n : schedule_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(what + ": unknown coefficient schedule '" + std::string(name) + "' (known: " + known +
              ", or a list of [a, b, c])");
}

int default_steps(std::string_view name) {
  if (name == "keller") return 5;
  return static_cast<int>(named_schedule(name, "schedule").size());
}

NsCoefficient coefficient_at(const std::vector<NsCoefficient>& schedule, int step) {
  if (schedule.empty()) throw Error("empty Newton-Schulz coefficient schedule");
  const auto last = static_cast<int>(schedule.size()) - 1;
  return schedule[static_cast<std::size_t>(step < last ? step : last)];
}

}  // namespace dmuon
