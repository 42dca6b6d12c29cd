#pragma once
// Principal components of a sparse cells × features matrix, centred implicitly:
// the centred matrix A = X - 1 mu^T is only ever applied to blocks of vectors
// (A V = X V - 1 (mu^T V), A^T B = X^T B - mu (1^T B)), so no dense cells ×
// features copy is formed.
//
// Method: randomized block subspace iteration with Rayleigh–Ritz (Halko,
// Martinsson & Tropp 2011, Alg. 4.4 with a Ritz step per iteration). A block of
// l = n_comps + oversample Gaussian vectors (stream Purpose::pca) is multiplied by
// A^T A and re-orthonormalised until the leading n_comps Ritz pairs (theta, y) of
// A^T A have relative residuals ||A^T A y - theta y|| / theta below tol. The
// products with A and A^T are Kokkos kernels (one row, resp. one feature, per
// league entry; sums in a fixed order, so the result is independent of the
// thread count); QR and the small eigenproblem are Eigen on the host.
//
// Output as scanpy's pp.pca: components (rows = principal axes), scores
// A y_i = U_i s_i, variance s_i^2 / (n - 1), variance ratio over the total
// variance of the features, signs fixed so each axis' largest-magnitude loading is
// positive (scikit-learn's svd_flip with u_based_decision=False).

#include <cstdint>
#include <vector>

#include "kotml/data/sparse.hpp"

namespace kotml::data {

struct PcaOptions {
  std::int64_t n_comps = 50;
  std::int64_t oversample = 0;  // 0: max(10, n_comps / 2)
  std::int64_t max_iter = 300;
  double tol = 1e-7;
  std::uint64_t seed = 0;
};

struct PcaResult {
  std::int64_t n_obs = 0, n_features = 0, n_comps = 0;
  std::vector<double> mean;            // n_features
  std::vector<double> components;      // n_comps × n_features, row-major
  std::vector<double> scores;          // n_obs × n_comps, row-major
  std::vector<double> singular_values; // n_comps, descending
  std::vector<double> variance;        // singular_values² / (n_obs - 1)
  std::vector<double> variance_ratio;  // variance / total variance of the features
  std::int64_t iterations = 0;
  bool converged = false;
  double residual = 0;                 // largest relative Ritz residual at the end
};

/// Requires 0 < n_comps < min(rows, cols) (as ARPACK); Error::option otherwise.
PcaResult pca(const HostCsr& x, const PcaOptions& options);

}  // namespace kotml::data
