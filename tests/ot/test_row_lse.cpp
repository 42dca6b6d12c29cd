// The two row log-sum-exp kernels of the Sinkhorn engine: the host SIMD one and
// the portable vector-lane one (what GPUs run), against a long double reference.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kotml/ot/lse.hpp"
#include "kotml/core/random.hpp"
#include "kotml/core/types.hpp"

namespace kotml::ot {
namespace {

template <class T>
long double reference(const std::vector<T>& c, const std::vector<T>& h, T s) {
  long double top = -std::numeric_limits<long double>::infinity();
  for (std::size_t j = 0; j < c.size(); ++j) top = std::max(top, static_cast<long double>(h[j]) - s * static_cast<long double>(c[j]));
  if (!std::isfinite(static_cast<double>(top))) return top;
  long double sum = 0;
  for (std::size_t j = 0; j < c.size(); ++j) sum += std::exp(static_cast<long double>(h[j]) - s * static_cast<long double>(c[j]) - top);
  return top + std::log(sum);
}

template <class T>
void launch_lanes(const Vector<T>& dc, const Vector<T>& dh, std::int64_t m, T s, const Vector<T>& out) {
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  Kokkos::parallel_for(
      "test::row_lse_lanes", Policy(1, Kokkos::AUTO, std::is_same<MemSpace, HostSpace>::value ? 1 : 32),
      KOKKOS_LAMBDA(const typename Policy::member_type& team) {
        const T v = detail::row_lse_lanes(team, dc.data(), dh.data(), m, s);
        Kokkos::single(Kokkos::PerTeam(team), [&]() { out(0) = v; });
      });
}

template <class T>
T portable(const std::vector<T>& c, const std::vector<T>& h, T s) {
  Vector<T> dc("c", c.size()), dh("h", h.size()), out("out", 1);
  auto hc = Kokkos::create_mirror_view(dc), hh = Kokkos::create_mirror_view(dh);
  for (std::size_t j = 0; j < c.size(); ++j) {
    hc(j) = c[j];
    hh(j) = h[j];
  }
  Kokkos::deep_copy(dc, hc);
  Kokkos::deep_copy(dh, hh);
  launch_lanes(dc, dh, static_cast<std::int64_t>(c.size()), s, out);
  T value{};
  Kokkos::deep_copy(value, Kokkos::subview(out, 0));
  return value;
}

template <class T>
void check(double tol) {
  random::Stream stream(11, random::Purpose::test_data, sizeof(T));
  for (std::int64_t m : {1, 7, 15, 16, 17, 250, 1001}) {
    std::vector<T> c(static_cast<std::size_t>(m)), h(static_cast<std::size_t>(m));
    for (auto& v : c) v = static_cast<T>(stream.uniform(0, 5));
    for (auto& v : h) v = static_cast<T>(stream.uniform(-3, 0));
    if (m > 3) h[2] = -std::numeric_limits<T>::infinity();  // a zero weight
    for (T s : {T(0.5), T(20), T(300)}) {
      const long double want = reference(c, h, s);
      const T host = detail::row_lse_host(c.data(), h.data(), m, s, std::numeric_limits<T>::quiet_NaN());
      // A guess close to the result takes the one-pass route; a wild one falls back.
      const T near = detail::row_lse_host(c.data(), h.data(), m, s, static_cast<T>(want) + T(0.7));
      const T wild = detail::row_lse_host(c.data(), h.data(), m, s, static_cast<T>(want) - T(1e4));
      const T lanes = portable(c, h, s);
      const double scale = 1 + std::fabs(static_cast<double>(want));
      EXPECT_NEAR(static_cast<double>(host), static_cast<double>(want), tol * scale) << "m " << m << " s " << s;
      EXPECT_NEAR(static_cast<double>(lanes), static_cast<double>(want), tol * scale) << "m " << m << " s " << s;
      EXPECT_NEAR(static_cast<double>(near), static_cast<double>(want), tol * scale) << "m " << m << " s " << s;
      EXPECT_NEAR(static_cast<double>(wild), static_cast<double>(want), tol * scale) << "m " << m << " s " << s;
    }
  }
  // Every term zero: −∞, not NaN.
  std::vector<T> c(20, T(1)), h(20, -std::numeric_limits<T>::infinity());
  EXPECT_EQ(detail::row_lse_host(c.data(), h.data(), 20, T(1), T(0)), -std::numeric_limits<T>::infinity());
  EXPECT_EQ(portable(c, h, T(1)), -std::numeric_limits<T>::infinity());
}

TEST(RowLse, DoubleKernelsMatchTheReference) { check<double>(1e-14); }
TEST(RowLse, FloatKernelsMatchTheReference) { check<float>(2e-6); }

}  // namespace
}  // namespace kotml::ot
