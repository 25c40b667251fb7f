// Muon and AdamW steps of the reference against closed forms computed element by element.
#pragma once
#include <string>
#include <vector>

#include "harness/verify/case_result.hpp"

namespace dmuon::verify {

// Two Muon steps on "diagonal" rectangular matrices (Newton-Schulz of [diag(d) 0] is
// [diag(p(d/N)) 0]) and on a rank-1 gradient, for one preset, with and without Nesterov.
std::vector<CaseResult> run_muon_closed_forms(const std::string& preset);
// Three AdamW steps against the unrolled sums m_t = (1-b1) sum_k b1^(t-k) g_k (and v_t).
std::vector<CaseResult> run_adamw_closed_forms(const std::string& preset);

}  // namespace dmuon::verify
