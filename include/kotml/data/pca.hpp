#pragma once
// Principal components of a sparse cells × features matrix, centred implicitly:
// the centred matrix A = X - 1 mu^T is only ever applied to blocks of vectors
// (A V = X V - 1 (mu^T V), A^T B = X^T B - mu (1^T B)) or formed in dense tiles
// of 512 cells, so no dense cells × features copy exists.
//
// The leading n_comps eigenpairs of C = A^T A (g × g, g = features) are found
// one of two ways (PcaSolver):
// - lanczos: block Lanczos with full reorthogonalisation (Golub & Van Loan
//   §10.3; what ARPACK does for svds, without restarts). Blocks of block_size
//   vectors, started from a Gaussian block (stream Purpose::pca), are
//   multiplied by C and orthogonalised twice against the whole basis; the
//   projected matrix T = Q^T C Q gives Ritz pairs (theta, y), with residuals
//   ||C y - theta y|| read off the last block. The iteration stops when the
//   leading residuals fall below tol · theta, or when the basis reaches
//   max_basis vectors (exact when the basis spans all features; otherwise
//   reported as not converged). The basis algebra is Eigen on the host; T's
//   wanted pairs come from LAPACK's dsyevr.
// - dense: the leading eigenpairs of a formed C by dsyevr (reduction to
//   tridiagonal form, then only the wanted pairs); their residuals, measured on
//   C, are at rounding level. Automatic takes it when the reduction's 4/3 g³
//   flops are at most the iteration's g² · max_basis + 4 g · max_basis² at its
//   largest basis (always when max_basis = g): then the iteration can cost more
//   than the exact answer.
//
// C is applied in one of two ways (PcaOperator):
// - cells: C V = A^T (A V) in one Kokkos pass over the stored values per block,
//   2 · nnz · b multiply-adds. Each thread takes a fixed chunk of rows (the
//   chunk size depends on the row count only) and a panel of 8 columns; the
//   chunks' partial sums are added in chunk order.
// - gram: C itself (double) is formed once from the dense centred tiles,
//   T(r, j) = x_rj - mu_j, stored per block of 128 features (a cell's values of
//   one block contiguous), as C += T^T T by GEMM on the block pairs on and
//   above the diagonal; tiles are added in cell order. On the host a tile's
//   pairs are shared among the rank's threads, each pair one GEMM on one BLAS
//   thread into its own block of C, so the bits do not depend on the thread
//   count; on a device the pairs go one after another. Forming costs about
//   n · g² / 2 multiply-adds, after which a block costs g² · b. Centring the
//   tile, rather than subtracting n mu mu^T from X^T X, keeps the cancellation
//   out of C. The scores A y_i are then GEMMs on the same tiles.
// Automatic takes gram when C fits (g ≤ gram_max_features) and its dense
// multiply-adds are at most dense_per_sparse times the 2 · nnz · max_basis of
// the cells operator at its largest basis: a GEMM multiply-add costs a fraction
// of a scattered sparse one (one core of the AMD EPYC VM of perf/RESULTS.md:
// 23-28 GFMA/s in OpenBLAS's dgemm against 4.4 in the cells pass; Kokkos
// Kernels' own GEMM, without a BLAS behind it, is about 3× slower than
// OpenBLAS). kotml's kernels give the same bits for any thread count, and so
// does the GEMM on one BLAS thread per rank (checked: prep's X_pca, PCs and
// variances equal on 1 and 2 OpenMP threads, Kokkos 4.6 with OpenBLAS). The
// ways agree with each other to rounding.
//
// Output as scanpy's pp.pca: components (rows = principal axes), scores
// A y_i = U_i s_i, variance s_i^2 / (n - 1), variance ratio over the total
// variance of the features, signs fixed so each axis' largest-magnitude loading is
// positive (scikit-learn's svd_flip with u_based_decision=False).

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/data/sparse.hpp"

namespace kotml::data {

/// How C = A^T A is applied (see above).
enum class PcaOperator { automatic, gram, cells };
/// How the leading eigenpairs of C are found (see above); dense needs gram.
enum class PcaSolver { automatic, lanczos, dense };

/// The names the CLI takes and the output's uns/kotml_prep records:
/// "auto", "gram", "cells"; "auto", "lanczos", "dense".
std::string to_string(PcaOperator op);
std::string to_string(PcaSolver solver);
/// "dense eigensolver on the Gram matrix", "Lanczos basis 640 on the cells".
std::string describe_pca_method(PcaSolver solver, PcaOperator op, std::int64_t basis_size);

struct PcaOptions {
  std::int64_t n_comps = 50;
  std::int64_t block_size = 8;
  std::int64_t max_basis = 0;  // 0: min(features, max(20 · n_comps, 400))
  double tol = 1e-8;           // relative residual of the leading Ritz pairs
  std::uint64_t seed = 0;
  PcaOperator op = PcaOperator::automatic;
  PcaSolver solver = PcaSolver::automatic;
};

/// Features up to which the Gram matrix is formed (g² doubles: 512 MiB).
inline constexpr std::int64_t gram_max_features = 8192;
/// Sparse multiply-adds of the cells operator one dense Gram multiply-add is worth.
inline constexpr double dense_per_sparse = 4.0;

/// The operator PcaOperator::automatic takes for this matrix and these options.
PcaOperator choose_pca_operator(const HostCsr& x, const PcaOptions& options);
/// The solver PcaSolver::automatic takes on a formed C of this many features.
PcaSolver choose_pca_solver(std::int64_t features, const PcaOptions& options);

struct PcaResult {
  std::int64_t n_obs = 0, n_features = 0, n_comps = 0;
  std::vector<double> mean;            // n_features
  std::vector<double> components;      // n_comps × n_features, row-major
  std::vector<double> scores;          // n_obs × n_comps, row-major
  std::vector<double> singular_values; // n_comps, descending
  std::vector<double> variance;        // singular_values² / (n_obs - 1)
  std::vector<double> variance_ratio;  // variance / total variance of the features
  std::int64_t iterations = 0;        // blocks multiplied by A^T A (0 for dense)
  std::int64_t basis_size = 0;        // the features, for dense
  PcaOperator op = PcaOperator::cells;      // the operator used (never automatic)
  PcaSolver solver = PcaSolver::lanczos;    // the solver used (never automatic)
  bool converged = false;
  double residual = 0;                 // largest relative Ritz residual at the end
};

/// Requires 0 < n_comps < min(rows, cols) (as ARPACK); Error::option otherwise.
PcaResult pca(const HostCsr& x, const PcaOptions& options);

}  // namespace kotml::data
