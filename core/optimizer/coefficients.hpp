// Newton-Schulz coefficient schedules: named published sets and explicit lists.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace dmuon {

// One quintic step X <- a X + b (X X^T) X + c (X X^T)^2 X, i.e. p(x) = a x + b x^3 + c x^5.
struct NsCoefficient {
  double a = 0, b = 0, c = 0;
  double apply(double x) const { const double x2 = x * x; return x * (a + x2 * (b + c * x2)); }
};

// Names understood by named_schedule(): keller, you, polar-express (= polar-express-1.05),
// polar-express-1.01. Sources: ../shared/research/muon-anchors.md section 5.5.
std::vector<std::string> schedule_names();
// Throws dmuon::Error naming `what` for an unknown name.
std::vector<NsCoefficient> named_schedule(std::string_view name, const std::string& what);
// The steps a named schedule runs by default (its length; keller: 5).
int default_steps(std::string_view name);

// Coefficient of iteration `step` (0-based): steps past the end of the list repeat its last
// entry, the Polar Express convention.
NsCoefficient coefficient_at(const std::vector<NsCoefficient>& schedule, int step);

}  // namespace dmuon
