#pragma once
// The learned ground metric: a k×d matrix A (k = --n-comps components over d
// features) defining the cell-to-cell cost ||A x − A y|| (or its square), plus
// the norm regulariser on A and the gene loadings that make A interpretable.

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/core/types.hpp"

namespace kotml::learn {

/// A k×d metric in host memory, row-major. It is small (k ≤ d, k typically 2–10),
/// so every rank keeps the whole matrix and applies the same update to it.
using MetricMatrix = HostMatrix<double>;

/// Orthonormal rows (A Aᵀ = I, ||A||_F = √k), as GGML-OT's default
/// torch.nn.init.orthogonal_: the Q factor of a d×k standard-normal matrix with
/// the signs fixed by R's diagonal, transposed. The normals come from
/// random::Stream(seed, Purpose::metric_init, 0). Error unless 1 ≤ k ≤ d.
MetricMatrix initial_metric(std::int64_t k, std::int64_t d, std::uint64_t seed);

enum class RegNorm { frobenius, l1 };

/// "fro" (also "2") or "1"; Error naming --reg-type otherwise.
RegNorm parse_reg_norm(const std::string& text);
std::string to_string(RegNorm norm);

/// reg · ||A|| (unsquared Frobenius, or the elementwise L1 norm).
double regularizer_value(const MetricMatrix& a, RegNorm norm, double reg);

/// Adds the gradient of reg · ||A|| to grad (k·d values, row-major): reg·A/||A||_F
/// (zero at A = 0), or reg·sign(A) (zero where A is zero), as torch's autograd.
void add_regularizer_gradient(const MetricMatrix& a, RegNorm norm, double reg, std::vector<double>& grad);

/// Frobenius norm of a k·d gradient.
double frobenius_norm(const std::vector<double>& values);

/// Loadings of each component on genes: Aᵀ (d×k) when the features are genes,
/// or feature_to_gene (n_genes×d, e.g. varm PCs) · Aᵀ for an embedding. Row-major
/// n_genes × k.
std::vector<double> gene_loadings(const MetricMatrix& a, const std::vector<double>& feature_to_gene,
                                  std::int64_t n_genes);

/// Per component, the `top` gene indices by |loading|, largest first (ties by
/// lower index). Result is k × min(top, n_genes), row-major.
std::vector<std::int64_t> top_genes(const std::vector<double>& loadings, std::int64_t n_genes,
                                    std::int64_t k, std::int64_t top);

}  // namespace kotml::learn
