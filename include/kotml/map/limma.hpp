#pragma once
// R limma (3.54) as pairOT runs it on pseudobulk data: lmFit, contrasts.fit,
// eBayes (trend = FALSE, robust = FALSE: pairOT's calls use the defaults) and
// topTable's Benjamini–Hochberg adjustment; plus pairOT's two uses of them.
//
// Maths (Smyth 2004; limma's lm.series, squeezeVar, fitFDist, .ebayes):
//  * lmFit. Y (n obs × G genes) and one design X (n × p, full rank). Householder
//    QR, X = QR (Eigen; limma uses LINPACK's dqrdc2 through lm.fit). The effects
//    E = Qᵀ Y give β = R⁻¹ E[0:p] and σ_g² = Σ_{i ≥ p} E_ig² / (n − p) (limma's
//    colMeans of the squared residual effects, summed in long double as R
//    does); cov = (RᵀR)⁻¹ and stdev.unscaled = √diag(cov), equal for every gene.
//  * contrasts.fit with C (p × q): β ← β C; when cov's correlation matrix has
//    all off-diagonal entries below 1e-14 (pairOT's ~0 + cluster design),
//    stdev.unscaled_j = √(Σ_k su_k² C_kj²), otherwise √(Σ_i (chol(cor) (su ∘ C))_ij²).
//  * eBayes. fitFDist on s² = σ² with d = n − p: s² floored at 1e-5 · median
//    (median 0 counts as 1), e = log s² − ψ(d/2) + log(d/2), ē = mean e,
//    v = Σ(e − ē)²/(G − 1) − ψ'(d/2). If v > 0: d₀ = 2 ψ'⁻¹(v) (limma's
//    trigammaInverse Newton iteration) and s₀² = exp(ē + ψ(d₀/2) − log(d₀/2));
//    otherwise d₀ = ∞ and s₀² = mean of the floored s². Posterior
//    s̃² = (d s² + d₀ s₀²)/(d + d₀) (s₀² when d₀ = ∞); t = β / su / s̃;
//    df.total = min(d + d₀, G d); p = 2 P(T > |t|) by R's pt algorithm with
//    Boost.Math's regularised incomplete beta (pbeta in R).
//  * topTable's adj.P.Val: p.adjust(p, "BH") over all genes of the coefficient.
// ψ, ψ', ψ'' are Boost.Math's digamma, trigamma, polygamma(2, ·).
//
// pairOT's two uses (src/pairot/pp/_testing.py, R_DE_TEST_CODE):
//  * one-vs-all: per cluster c, design ~isclust (intercept + indicator of c),
//    eBayes, coefficient "isclustyes": logFC = mean over c's groups − mean over
//    the other groups;
//  * all-vs-all: design ~0 + x with one indicator per cluster, levels in R's
//    sorted order of the names "c_i" (i = pairOT's renaming index, so "c_10"
//    sorts before "c_2"), eBayes, makeContrasts "xA - xB" for every pair of
//    combn(levels, 2), contrasts.fit, eBayes. pairOT's table for (B, A) is the
//    one for (A, B) with logFC negated.
// Data layout: Y is the pseudobulk, groups × genes row-major; per-gene results
// are vectors indexed by gene.

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/map/pseudobulk.hpp"

namespace kotml::map {

/// limma's MArrayLM without the per-gene extras pairOT does not use.
struct LinearFit {
  std::int64_t n_genes = 0, n_coef = 0;
  std::vector<double> coefficients;      // n_genes × n_coef, row-major
  std::vector<double> stdev_unscaled;    // n_coef (the same for every gene)
  std::vector<double> cov_coefficients;  // n_coef × n_coef, row-major
  std::vector<double> sigma;             // n_genes
  double df_residual = 0;                // n_obs − n_coef
};

/// lmFit: y is n_obs × n_genes row-major, design n_obs × n_coef row-major.
/// Error when the design is not of full column rank or the sizes disagree.
LinearFit lm_fit(const std::vector<double>& y, std::int64_t n_obs, std::int64_t n_genes,
                 const std::vector<double>& design, std::int64_t n_coef);

/// contrasts.fit: contrasts is n_coef × n_contrasts row-major.
LinearFit contrasts_fit(const LinearFit& fit, const std::vector<double>& contrasts,
                        std::int64_t n_contrasts);

/// What eBayes adds to a fit.
struct Moderated {
  double s2_prior = 0, df_prior = 0, df_total = 0;
  std::vector<double> s2_post;        // n_genes
  std::vector<double> t;              // n_genes × n_coef, row-major
  std::vector<double> p_value;        // n_genes × n_coef, row-major
  std::vector<std::string> warnings;  // limma's warnings (zero variances)
};

/// eBayes(fit) with limma's defaults. Error when there are no residual degrees
/// of freedom.
Moderated ebayes(const LinearFit& fit);

/// fitFDist(x, df1) without covariate: the scaled-F prior (scale s₀², df2 d₀).
struct FDistFit {
  double scale = 0, df2 = 0;
};
FDistFit fit_f_dist(const std::vector<double>& x, double df1,
                    std::vector<std::string>* warnings = nullptr);

/// limma's trigammaInverse: y with trigamma(y) = x (Newton; 1/x below 1e-6,
/// 1/√x above 1e7; NaN for x < 0).
double trigamma_inverse(double x);

/// 2 · pt(−|t|, df) as R computes it (df = ∞: normal).
double two_sided_t_p(double t, double df);

/// p.adjust(p, "BH").
std::vector<double> p_adjust_bh(const std::vector<double>& p);

/// One coefficient (or contrast) over all genes, as topTable gives it.
struct DeStats {
  std::vector<double> logfc, t, p_value, adj_p_value;  // by gene
  double s2_prior = 0, df_prior = 0, df_total = 0;     // the fit's eBayes prior
};

/// pairOT's one-vs-all: indexed by cluster code (size = number of cluster
/// codes); clusters without a group have empty stats.
std::vector<DeStats> limma_one_vs_all(const Pseudobulk& pb,
                                      std::vector<std::string>* warnings = nullptr);

/// pairOT's all-vs-all contrasts, in R's combn order of the sorted levels:
/// stats[k] is first[k] − second[k] (cluster codes).
struct AllVsAll {
  std::vector<std::int32_t> first, second;
  std::vector<DeStats> stats;
};
AllVsAll limma_all_vs_all(const Pseudobulk& pb, std::vector<std::string>* warnings = nullptr);

/// The tested clusters in R's level order (names "c_i" sorted as strings).
std::vector<std::int32_t> r_level_order(const Pseudobulk& pb);

}  // namespace kotml::map
