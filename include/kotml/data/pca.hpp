#pragma once
// Principal components of a sparse cells × features matrix, centred implicitly:
// the centred matrix A = X - 1 mu^T is only ever applied to blocks of vectors
// (A V = X V - 1 (mu^T V), A^T B = X^T B - mu (1^T B)), so no dense cells ×
// features copy is formed.
//
// Method: block Lanczos on the Gram operator C = A^T A with full
// reorthogonalisation (Golub & Van Loan §10.3; what ARPACK does for svds, without
// restarts). Blocks of block_size vectors, started from a Gaussian block (stream
// Purpose::pca), are multiplied by C and orthogonalised twice against the whole
// basis; the projected matrix T = Q^T C Q gives Ritz pairs (theta, y), with
// residuals ||C y - theta y|| read off the last block. The iteration stops when
// the leading n_comps residuals fall below tol · theta, or when the basis reaches
// max_basis vectors (exact when the basis spans all features; otherwise reported
// as not converged). A^T A V is one Kokkos
// kernel pass over the cells: each thread takes a fixed chunk of rows (the chunk
// size depends on the row count only) and a panel of 8 columns, and the chunks'
// partial sums are added in chunk order, so the result is the same bits for any
// thread count. The basis algebra (g × m, g = features) is Eigen on the host.
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
  std::int64_t block_size = 8;
  std::int64_t max_basis = 0;  // 0: min(features, max(20 · n_comps, 400))
  double tol = 1e-8;           // relative residual of the leading Ritz pairs
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
  std::int64_t iterations = 0;        // blocks multiplied by A^T A
  std::int64_t basis_size = 0;
  bool converged = false;
  double residual = 0;                 // largest relative Ritz residual at the end
};

/// Requires 0 < n_comps < min(rows, cols) (as ARPACK); Error::option otherwise.
PcaResult pca(const HostCsr& x, const PcaOptions& options);

}  // namespace kotml::data
