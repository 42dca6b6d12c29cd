// normalize_total and log1p (see normalize_total.hpp): one thread per cell for
// totals and scaling, one per stored value for log1p.

#include "kotml/data/normalize_total.hpp"

#include <Kokkos_Core.hpp>

#include "kotml/core/math.hpp"
#include "staging.hpp"

namespace kotml::data {
namespace {

using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;

struct RowTotals {
  Vector<const std::int64_t> indptr;
  Vector<const float> values;
  Vector<float> totals;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    float s = 0.0f;  // scanpy sums a float32 matrix's rows in float32
    for (std::int64_t p = indptr(i); p < indptr(i + 1); ++p) s += values(p);
    totals(i) = s;
  }
};

struct ScaleRows {
  Vector<const std::int64_t> indptr;
  Vector<float> values;
  Vector<const float> totals;
  float target;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    const float factor = totals(i) / target;
    if (!(factor > 0.0f)) return;
    for (std::int64_t p = indptr(i); p < indptr(i + 1); ++p) values(p) = values(p) / factor;
  }
};

struct Log1p {
  Vector<float> values;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t p) const { values(p) = kmath::log1p(values(p)); }
};

struct CheckValues {
  Vector<const float> values;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t p, std::int64_t& non_finite, std::int64_t& negative,
                                         std::int64_t& non_integer) const {
    const float v = values(p);
    if (!kmath::isfinite(v)) {
      ++non_finite;
      return;
    }
    if (v < 0.0f) ++negative;
    if (kmath::floor(v) != v) ++non_integer;
  }
};

void run_totals(const RowTotals& k, std::int64_t n) { Kokkos::parallel_for("kotml::data::cell_totals", Policy(0, n), k); }
void run_scale(const ScaleRows& k, std::int64_t n) { Kokkos::parallel_for("kotml::data::normalize_total", Policy(0, n), k); }
void run_log1p(const Log1p& k, std::int64_t n) { Kokkos::parallel_for("kotml::data::log1p", Policy(0, n), k); }
ValueCheck run_check(const CheckValues& k, std::int64_t n) {
  ValueCheck c;
  Kokkos::parallel_reduce("kotml::data::check_values", Policy(0, n), k, c.non_finite, c.negative, c.non_integer);
  return c;
}

}  // namespace

std::vector<float> cell_totals(const HostCsr& counts) {
  RowTotals k{detail::stage(counts.indptr), detail::stage(counts.values), Vector<float>(no_init("cell totals"), counts.rows)};
  if (counts.rows > 0) run_totals(k, counts.rows);
  return detail::to_host(k.totals);
}

void normalize_total(HostCsr& counts, double target_sum) {
  const auto totals = cell_totals(counts);
  auto values = detail::stage_mutable(counts.values);
  if (counts.rows > 0)
    run_scale(ScaleRows{detail::stage(counts.indptr), values, detail::stage(totals), static_cast<float>(target_sum)},
              counts.rows);
  detail::copy_back(counts.values, values);
}

void log1p(HostCsr& x) {
  auto values = detail::stage_mutable(x.values);
  const auto n = static_cast<std::int64_t>(x.values.size());
  if (n > 0) run_log1p(Log1p{values}, n);
  detail::copy_back(x.values, values);
}

ValueCheck check_values(const HostCsr& x) {
  const auto n = static_cast<std::int64_t>(x.values.size());
  if (n == 0) return {};
  return run_check(CheckValues{detail::stage(x.values)}, n);
}

}  // namespace kotml::data
