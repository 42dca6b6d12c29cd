#include "kotml/stage/ot_settings.hpp"

#include <cmath>

#include "kotml/core/error.hpp"
#include "kotml/core/progress.hpp"

namespace kotml::stage {

std::size_t OtSettings::cost_memory(std::int64_t bytes) {
  if (bytes < 1) throw Error::option("cost-memory", "must be a positive number of bytes, got " + std::to_string(bytes));
  return static_cast<std::size_t>(bytes);
}

void OtSettings::validate() const {
  if (!(entropic_reg >= 0.0) || !std::isfinite(entropic_reg))
    throw Error::option("entropic-reg", "must be 0 (exact EMD) or positive, got " + log::number_text(entropic_reg));
  if (sinkhorn_max_iter < 1)
    throw Error::option("sinkhorn-max-iter", "must be at least 1, got " + std::to_string(sinkhorn_max_iter));
  if (!(sinkhorn_tol >= 0.0))
    throw Error::option("sinkhorn-tol", "must be zero or positive, got " + log::number_text(sinkhorn_tol));
  if (emd_max_iter < 1)
    throw Error::option("emd-max-iter", "must be at least 1, got " + std::to_string(emd_max_iter));
  if (emd_max_entries < 1)
    throw Error::option("emd-max-entries", "must be at least 1, got " + std::to_string(emd_max_entries));
}

void OtSettings::check_emd_size(const data::Cohort& cohort, const std::vector<GlobalId>& donors) const {
  if (!exact() || donors.size() < 2) return;
  // The largest pair is the two largest donors (ties: the first listed).
  const auto points = [&](GlobalId u) { return cohort.donors[static_cast<std::size_t>(u)].n_points; };
  std::size_t first = 0, second = 1;
  if (points(donors[second]) > points(donors[first])) std::swap(first, second);
  for (std::size_t i = 2; i < donors.size(); ++i) {
    if (points(donors[i]) > points(donors[first])) {
      second = first;
      first = i;
    } else if (points(donors[i]) > points(donors[second])) {
      second = i;
    }
  }
  const auto n = points(donors[first]), m = points(donors[second]);
  if (static_cast<double>(n) * static_cast<double>(m) <= static_cast<double>(emd_max_entries)) return;
  const auto& a = cohort.donors[static_cast<std::size_t>(donors[first])];
  const auto& b = cohort.donors[static_cast<std::size_t>(donors[second])];
  throw Error::option("emd-max-entries",
                      "exact EMD between donors '" + a.id + "' (" + std::to_string(n) + " points) and '" + b.id + "' (" +
                          std::to_string(m) + " points) needs " + std::to_string(n * m) +
                          " cost entries, more than the limit of " + std::to_string(emd_max_entries) +
                          ": use Sinkhorn for donors this large (--entropic-reg, e.g. 0.1), fewer cells per donor "
                          "(--n-cells), or raise --emd-max-entries");
}

void SolveReport::count(ot::SolveStatus status) {
  switch (status) {
    case ot::SolveStatus::optimal:
      break;
    case ot::SolveStatus::max_iter:
      ++max_iter;
      break;
    case ot::SolveStatus::infeasible:
      ++infeasible;
      break;
    case ot::SolveStatus::numerical_error:
      ++numerical;
      break;
  }
}

std::vector<std::string> SolveReport::warnings(const std::string& what) const {
  std::vector<std::string> lines;
  if (max_iter > 0)
    lines.push_back(what + ": " + std::to_string(max_iter) +
                    " OT solve(s) stopped at the iteration limit before converging");
  if (infeasible > 0)
    lines.push_back(what + ": " + std::to_string(infeasible) + " OT solve(s) could not match the marginals");
  if (numerical > 0)
    lines.push_back(what + ": " + std::to_string(numerical) + " OT solve(s) hit non-finite values");
  return lines;
}

}  // namespace kotml::stage
