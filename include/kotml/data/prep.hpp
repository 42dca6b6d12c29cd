#pragma once
// The `kotml prep` pipeline: counts -> normalize_total + log1p -> highly variable
// genes ('seurat') -> PCA on the HVG matrix -> a new .h5ad with
//   X                 log-normalised values (CSR, float32)
//   layers/counts     the input counts (unless disabled); its indices and indptr
//                     are hard links to X's, which has the same pattern
//   var               input columns + highly_variable, means, dispersions,
//                     dispersions_norm (+ highly_variable_nbatches/_intersection)
//   obsm/X_pca        scores; varm/PCs loadings (genes outside the HVG set: 0)
//   uns/pca/variance, uns/pca/variance_ratio, uns/hvg/flavor, uns/kotml_prep/...
// and the input's obs, other layers, obsm and varm carried over (the last three
// copied byte for byte, in their own dtype and compression). Runs on one rank
// (the caller's); the result does not depend on the thread count.

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/data/hvg.hpp"
#include "kotml/data/pca.hpp"

namespace kotml::data {

struct PrepOptions {
  std::string input;
  std::string output;
  std::string layer;            // read counts from layers/<layer> instead of X
  bool normalize = true;        // normalize_total + log1p (off for data already log-normalised)
  double target_sum = 1e4;
  bool select_hvg = true;       // off: PCA on all genes
  HvgOptions hvg;
  std::string batch_key;        // obs column for batch-aware HVG
  bool run_pca = true;
  bool n_comps_given = false;   // else min(50, min(cells, genes) - 1) as scanpy
  PcaOptions pca;
  bool keep_counts = true;      // write the input matrix as layers/counts
  int compression_level = 0;
};

struct PrepReport {
  std::int64_t n_obs = 0, n_vars = 0, n_hvg = 0, n_comps = 0;
  std::int64_t pca_iterations = 0;
  std::int64_t pca_basis = 0;
  PcaOperator pca_operator = PcaOperator::cells;
  PcaSolver pca_solver = PcaSolver::lanczos;
  bool pca_converged = false;
  double pca_residual = 0;
  double explained_variance = 0;  // sum of the variance ratios
  std::vector<std::string> warnings;
};

PrepReport run_prep(const PrepOptions& options);

}  // namespace kotml::data
