#include "kotml/ot/cost.hpp"

#include "kotml/core/gemm.hpp"

#include <string>

#include "kotml/core/error.hpp"

namespace kotml::ot {

const char* cost_name(Cost cost) {
  switch (cost) {
    case Cost::euclidean: return "euclidean";
    case Cost::sqeuclidean: return "sqeuclidean";
    case Cost::cosine: return "cosine";
  }
  return "unknown";
}

Cost parse_cost(const std::string& name, const std::string& option) {
  if (name == "euclidean") return Cost::euclidean;
  if (name == "sqeuclidean") return Cost::sqeuclidean;
  if (name == "cosine") return Cost::cosine;
  throw Error::option(option, "must be euclidean, sqeuclidean or cosine, got '" + name + "'");
}

namespace {

// Below this dimension the direct form is as fast as GEMM and exact.
constexpr int gemm_min_dim = 24;
// The GEMM form of ||x−y||² loses about log2((|x|²+|y|²)/C) bits; entries that
// lose more than 10 are recomputed directly.
constexpr double refine_ratio = 1.0 / 1024.0;

template <class T>
void direct_cost_rows(Cost kind, const Matrix<const T>& X, const Matrix<const T>& Y,
                      const Vector<T>& norm_x, const Vector<T>& norm_y, const Matrix<T>& C) {
  const int dim = static_cast<int>(X.extent(1));
  const auto m = static_cast<std::int64_t>(Y.extent(0));
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  Kokkos::parallel_for(
      "kotml::ot::cost_matrix_direct", Policy(static_cast<int>(X.extent(0)), Kokkos::AUTO),
      KOKKOS_LAMBDA(const typename Policy::member_type& team) {
        const std::int64_t i = team.league_rank();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](const std::int64_t j) {
          C(i, j) = ground_cost<T>(kind, &X(i, 0), &Y(j, 0), dim, norm_x(i), norm_y(j));
        });
      });
}

template <class T>
void row_norms(const Matrix<const T>& X, const Vector<T>& norms) {
  const int dim = static_cast<int>(X.extent(1));
  Kokkos::parallel_for(
      "kotml::ot::row_norms", Kokkos::RangePolicy<ExecSpace>(0, X.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { norms(i) = row_norm<T>(&X(i, 0), dim); });
}

// C = X Yᵀ. Row-major n×m C is column-major m×n Cᵀ = Y Xᵀ, and row-major X, Y
// are column-major Xᵀ, Yᵀ: so this is one column-major GEMM, the layout Kokkos
// Kernels hands to the BLAS library.
template <class T>
void dot_products(const Matrix<const T>& X, const Matrix<const T>& Y, const Matrix<T>& C) {
  using Left = Kokkos::View<T**, Kokkos::LayoutLeft, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using ConstLeft =
      Kokkos::View<const T**, Kokkos::LayoutLeft, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const auto n = X.extent(0), m = Y.extent(0), d = X.extent(1);
  ConstLeft xt(X.data(), d, n);
  ConstLeft yt(Y.data(), d, m);
  Left ct(C.data(), m, n);
  kotml::gemm("T", "N", T(1), yt, xt, T(0), ct);
}

template <class T>
void finish_gemm_cost(Cost kind, const Matrix<const T>& X, const Matrix<const T>& Y,
                      const Vector<T>& norm_x, const Vector<T>& norm_y, const Matrix<T>& C) {
  const int dim = static_cast<int>(X.extent(1));
  Kokkos::parallel_for(
      "kotml::ot::cost_matrix_finish",
      Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>({0, 0}, {C.extent(0), C.extent(1)}),
      KOKKOS_LAMBDA(const std::int64_t i, const std::int64_t j) {
        const T dot = C(i, j);
        if (kind == Cost::cosine) {
          const T nx = norm_x(i), ny = norm_y(j);
          C(i, j) = (nx > T(0) && ny > T(0)) ? T(1) - dot / (nx * ny) : T(1);
          return;
        }
        const T nx2 = norm_x(i) * norm_x(i), ny2 = norm_y(j) * norm_y(j);
        T sq = nx2 + ny2 - T(2) * dot;
        if (!(sq > T(refine_ratio) * (nx2 + ny2)))
          sq = ground_cost<T>(Cost::sqeuclidean, &X(i, 0), &Y(j, 0), dim, T(0), T(0));
        C(i, j) = kind == Cost::sqeuclidean ? sq : kmath::sqrt(sq);
      });
}

template <class T>
void project_rows(const Matrix<const T>& X, const Matrix<const double>& A, const Matrix<T>& Z) {
  const auto d = static_cast<std::int64_t>(X.extent(1));
  Kokkos::parallel_for(
      "kotml::ot::project",
      Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>({0, 0}, {X.extent(0), A.extent(0)}),
      KOKKOS_LAMBDA(const std::int64_t i, const std::int64_t a) {
        double s = 0;
        for (std::int64_t c = 0; c < d; ++c) s += A(a, c) * static_cast<double>(X(i, c));
        Z(i, a) = static_cast<T>(s);
      });
}

template <class T>
void norms_in_double(const Matrix<const T>& X, const Vector<double>& norms) {
  const int dim = static_cast<int>(X.extent(1));
  Kokkos::parallel_for(
      "kotml::ot::point_norms", Kokkos::RangePolicy<ExecSpace>(0, X.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { norms(i) = row_norm<double>(&X(i, 0), dim); });
}

}  // namespace

template <class T>
void point_norms(const Matrix<const T>& X, const Vector<double>& norms) {
  if (norms.extent(0) != X.extent(0)) throw Error("", "norms", "one norm per row is needed");
  norms_in_double(X, norms);
  Kokkos::fence();
}

template <class T>
void cost_matrix(Cost kind, const Matrix<const T>& X, const Matrix<const T>& Y, const Matrix<T>& C) {
  if (X.extent(1) != Y.extent(1))
    throw Error("", "cost", "the point sets have different dimensions (" +
                                std::to_string(X.extent(1)) + " and " + std::to_string(Y.extent(1)) + ")");
  if (C.extent(0) != X.extent(0) || C.extent(1) != Y.extent(0))
    throw Error("", "cost", "the cost matrix is " + std::to_string(C.extent(0)) + "×" +
                                std::to_string(C.extent(1)) + ", not " + std::to_string(X.extent(0)) +
                                "×" + std::to_string(Y.extent(0)));
  Vector<T> norm_x(no_init("kotml::ot::norm_x"), X.extent(0));
  Vector<T> norm_y(no_init("kotml::ot::norm_y"), Y.extent(0));
  row_norms(X, norm_x);
  row_norms(Y, norm_y);
  if (static_cast<int>(X.extent(1)) < gemm_min_dim || X.extent(0) == 0 || Y.extent(0) == 0) {
    direct_cost_rows(kind, X, Y, norm_x, norm_y, C);
  } else {
    dot_products(X, Y, C);
    finish_gemm_cost(kind, X, Y, norm_x, norm_y, C);
  }
  Kokkos::fence();
}

template <class T>
void project(const Matrix<const T>& X, const Matrix<const double>& A, const Matrix<T>& Z) {
  if (X.extent(1) != A.extent(1))
    throw Error("", "metric", "the map has " + std::to_string(A.extent(1)) +
                                  " columns but the points have " + std::to_string(X.extent(1)) +
                                  " dimensions");
  if (Z.extent(0) != X.extent(0) || Z.extent(1) != A.extent(0))
    throw Error("", "metric", "the projection output has the wrong shape");
  project_rows(X, A, Z);
  Kokkos::fence();
}

template void cost_matrix<float>(Cost, const Matrix<const float>&, const Matrix<const float>&,
                                 const Matrix<float>&);
template void cost_matrix<double>(Cost, const Matrix<const double>&, const Matrix<const double>&,
                                  const Matrix<double>&);
template void point_norms<float>(const Matrix<const float>&, const Vector<double>&);
template void point_norms<double>(const Matrix<const double>&, const Vector<double>&);
template void project<float>(const Matrix<const float>&, const Matrix<const double>&, const Matrix<float>&);
template void project<double>(const Matrix<const double>&, const Matrix<const double>&,
                              const Matrix<double>&);

}  // namespace kotml::ot
