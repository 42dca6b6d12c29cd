// The `kotml prep` pipeline (see prep.hpp).

#include "kotml/data/prep.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <Kokkos_Timer.hpp>

#include "kotml/core/error.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/progress.hpp"
#include "kotml/data/normalize_total.hpp"
#include "kotml/data/sparse.hpp"
#include "kotml/io/anndata.hpp"

namespace kotml::data {
namespace {

io::Column numeric_column(const std::string& name, const std::vector<double>& values) {
  io::Column c;
  c.name = name;
  c.kind = io::ColumnKind::numeric;
  c.dtype = "float64";
  c.numbers = values;
  return c;
}

io::Column bool_column(const std::string& name, const std::vector<std::uint8_t>& values) {
  io::Column c;
  c.name = name;
  c.kind = io::ColumnKind::boolean;
  c.dtype = "bool";
  c.numbers.assign(values.begin(), values.end());
  return c;
}

/// Batch codes per cell from an obs column, categories sorted as pandas does
/// for strings (anndata's categoricals keep their own order, which we follow).
std::vector<std::int32_t> batch_codes(const io::AnnDataReader& reader, const std::string& key, std::int64_t& n) {
  const auto columns = reader.obs_columns();
  if (std::find(columns.begin(), columns.end(), key) == columns.end())
    throw Error(reader.path(), "obs/" + key, "no such obs column for --batch-key");
  const auto column = reader.obs(key);
  const auto labels = column.as_strings();
  std::vector<std::string> categories;
  if (column.kind == io::ColumnKind::categorical) {
    // Only categories that occur: a batch without cells has no statistics.
    for (const auto& c : column.categories)
      if (std::find(labels.begin(), labels.end(), c) != labels.end()) categories.push_back(c);
  } else {
    categories = labels;
    std::sort(categories.begin(), categories.end());
    categories.erase(std::unique(categories.begin(), categories.end()), categories.end());
  }
  std::vector<std::int32_t> codes(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i].empty())
      throw Error(reader.path(), "obs/" + key, "cell " + std::to_string(i) + " has no batch (missing value)");
    codes[i] = static_cast<std::int32_t>(std::find(categories.begin(), categories.end(), labels[i]) - categories.begin());
  }
  n = static_cast<std::int64_t>(categories.size());
  return codes;
}

/// The input's other layers, obsm and varm entries, to be copied into the
/// output byte for byte (io::AnnDataContent::copied): prep does not read them,
/// so they keep their dtype, encoding and compression. Their shapes are checked
/// here, before any work.
std::vector<std::string> carried_elements(const io::AnnDataReader& reader, const PrepOptions& o, std::int64_t n_obs,
                                          std::int64_t n_vars) {
  std::vector<std::string> carried;
  const auto carry = [&](const std::string& element, std::int64_t rows, std::int64_t cols) {
    const auto info = reader.matrix_info(element);
    if (info.rows != rows || (cols >= 0 && info.cols != cols))
      throw Error(o.input, element,
                  "is " + std::to_string(info.rows) + " x " + std::to_string(info.cols) + ", not " +
                      std::to_string(rows) + (cols >= 0 ? " x " + std::to_string(cols) : " rows"));
    carried.push_back(element);
  };
  for (const auto& key : reader.layers())
    if (!(key == "counts" && o.keep_counts && o.normalize)) carry("layers/" + key, n_obs, n_vars);
  for (const auto& key : reader.obsm_keys())
    if (!(key == "X_pca" && o.run_pca)) carry("obsm/" + key, n_obs, -1);
  for (const auto& key : reader.varm_keys())
    if (!(key == "PCs" && o.run_pca)) carry("varm/" + key, n_vars, -1);
  return carried;
}

}  // namespace

PrepReport run_prep(const PrepOptions& o) {
  PrepReport report;
  Kokkos::Timer timer;
  const auto stage = [&](const std::string& what) {
    log::info("prep: " + what + " " + std::to_string(timer.seconds()) + " s");
    timer.reset();
  };
  if (o.normalize && !(o.target_sum > 0.0) ) throw Error::option("target-sum", "must be positive");
  const io::AnnDataReader reader(o.input);
  const std::string element = o.layer.empty() ? "X" : "layers/" + o.layer;
  if (!o.layer.empty()) {
    const auto layers = reader.layers();
    if (std::find(layers.begin(), layers.end(), o.layer) == layers.end())
      throw Error(o.input, element, "no such layer");
  }
  HostCsr x = reader.read_csr<float>(element);
  report.n_obs = x.rows;
  report.n_vars = x.cols;
  const auto gene_names = reader.var_names();
  stage("read " + element);
  // Said here, before any step would fail on it with a cause of its own.
  if (x.rows < 2 || x.cols < 1)
    throw Error(o.input, element,
                "has " + std::to_string(x.rows) + " cells and " + std::to_string(x.cols) +
                    " genes; prep needs at least 2 cells and 1 gene");

  const auto carried = carried_elements(reader, o, x.rows, x.cols);

  const ValueCheck check = check_values(x);
  if (check.non_finite > 0)
    throw Error(o.input, element, std::to_string(check.non_finite) + " NaN or infinite value(s)");
  if (o.normalize && check.negative > 0)
    throw Error(o.input, element,
                std::to_string(check.negative) +
                    " negative value(s): normalize_total expects counts (use --no-normalize for log data)");
  if (o.normalize && check.non_integer > 0)
    report.warnings.push_back(element + " holds " + std::to_string(check.non_integer) +
                              " non-integer values; normalize_total + log1p expect raw counts");

  // normalize_total and log1p change values only: the counts share X's pattern.
  std::vector<float> counts;
  if (o.keep_counts && o.normalize) counts = x.values;
  if (o.normalize) {
    normalize_total(x, o.target_sum);
    log1p(x);
  }
  stage("checked and normalised");

  // Highly variable genes.
  std::vector<std::int64_t> genes;
  HvgResult hvg;
  if (o.select_hvg) {
    if (o.hvg.n_top_genes > x.cols)
      throw Error::option("n-top-genes", "asks for " + std::to_string(o.hvg.n_top_genes) + " genes but " + o.input +
                                             " has " + std::to_string(x.cols));
    if (o.hvg.n_top_genes < 0) throw Error::option("n-top-genes", "must be positive");
    if (o.hvg.n_bins < 1) throw Error::option("n-bins", "must be positive");
    std::vector<std::int32_t> batch;
    std::int64_t n_batches = 0;
    if (!o.batch_key.empty()) batch = batch_codes(reader, o.batch_key, n_batches);
    hvg = highly_variable_genes(x, o.hvg, gene_names, batch, n_batches);
    genes = hvg.selected();
    if (genes.empty())
      throw Error(o.input, element,
                  "no highly variable genes pass the cutoffs; set --n-top-genes or relax --min-mean/--min-disp");
  } else {
    for (std::int64_t g = 0; g < x.cols; ++g) genes.push_back(g);
  }
  report.n_hvg = static_cast<std::int64_t>(genes.size());
  stage("highly variable genes");

  // PCA on the HVG columns.
  PcaResult pca_result;
  if (o.run_pca) {
    PcaOptions po = o.pca;
    const std::int64_t smaller = std::min<std::int64_t>(x.rows, report.n_hvg);
    if (!o.n_comps_given) po.n_comps = std::min<std::int64_t>(50, smaller - 1);
    if (po.n_comps < 1)
      throw Error(o.input, element, "too few cells or genes for PCA (" + std::to_string(x.rows) + " cells, " +
                                        std::to_string(report.n_hvg) + " genes)");
    pca_result = pca(select_columns(x, genes), po);
    report.n_comps = po.n_comps;
    report.pca_iterations = pca_result.iterations;
    report.pca_basis = pca_result.basis_size;
    report.pca_operator = pca_result.op;
    report.pca_solver = pca_result.solver;
    report.pca_converged = pca_result.converged;
    report.pca_residual = pca_result.residual;
    for (const double r : pca_result.variance_ratio) report.explained_variance += r;
    if (!pca_result.converged && pca_result.solver == PcaSolver::dense)
      report.warnings.push_back("PCA: the dense eigensolver's relative residual " +
                                log::number_text(pca_result.residual) + " is above --pca-tol " +
                                log::number_text(po.tol) + ", which is below what double precision reaches");
    else if (!pca_result.converged)
      report.warnings.push_back("PCA stopped at a Lanczos basis of " + std::to_string(pca_result.basis_size) +
                                " vectors with relative residual " + log::number_text(pca_result.residual) +
                                " (tolerance " + log::number_text(po.tol) +
                                "); trailing components may be inexact (raise --pca-max-basis)");
  }

  if (o.run_pca)
    stage("PCA (" + describe_pca_method(pca_result.solver, pca_result.op, pca_result.basis_size) + ")");

  // The output file.
  io::AnnDataContent out;
  out.n_obs = x.rows;
  out.n_vars = x.cols;
  out.x_is_sparse = true;
  out.x_csr = std::move(x);
  out.compression_level = o.compression_level;
  out.obs_names = reader.obs_names();
  out.var_names = gene_names;
  for (const auto& name : reader.obs_columns()) out.obs_columns.push_back(reader.obs(name));
  const std::vector<std::string> added = {"highly_variable", "means", "dispersions", "dispersions_norm",
                                          "highly_variable_nbatches", "highly_variable_intersection"};
  for (const auto& name : reader.var_columns())
    if (std::find(added.begin(), added.end(), name) == added.end()) out.var_columns.push_back(reader.var(name));
  if (o.select_hvg) {
    out.var_columns.push_back(bool_column("highly_variable", hvg.highly_variable));
    out.var_columns.push_back(numeric_column("means", hvg.means));
    out.var_columns.push_back(numeric_column("dispersions", hvg.dispersions));
    out.var_columns.push_back(numeric_column("dispersions_norm", hvg.dispersions_norm));
    if (hvg.n_batches > 0) {
      out.var_columns.push_back(numeric_column(
          "highly_variable_nbatches",
          std::vector<double>(hvg.highly_variable_nbatches.begin(), hvg.highly_variable_nbatches.end())));
      out.var_columns.back().dtype = "int64";
      out.var_columns.push_back(bool_column("highly_variable_intersection", hvg.highly_variable_intersection));
    }
    out.uns_strings.emplace_back("hvg/flavor", "seurat");
  }
  if (o.keep_counts && o.normalize) out.layers_with_x_pattern.emplace_back("counts", std::move(counts));
  out.copy_source = o.input;
  out.copied = carried;
  if (o.run_pca) {
    const std::int64_t k = pca_result.n_comps, n_hvg = report.n_hvg;
    out.obsm.push_back({"X_pca", {pca_result.scores, {out.n_obs, k}}});
    std::vector<double> loadings(static_cast<std::size_t>(out.n_vars * k), 0.0);
    for (std::int64_t h = 0; h < n_hvg; ++h)
      for (std::int64_t c = 0; c < k; ++c) loadings[genes[h] * k + c] = pca_result.components[c * n_hvg + h];
    out.varm.push_back({"PCs", {loadings, {out.n_vars, k}}});
    out.uns_arrays.push_back({"pca/variance", {pca_result.variance, {k}}});
    out.uns_arrays.push_back({"pca/variance_ratio", {pca_result.variance_ratio, {k}}});
    out.uns_strings.emplace_back("pca/params/mask_var", o.select_hvg ? "highly_variable" : "none");
    out.uns_scalars.emplace_back("kotml_prep/pca_iterations", static_cast<double>(pca_result.iterations));
    out.uns_scalars.emplace_back("kotml_prep/pca_basis", static_cast<double>(pca_result.basis_size));
    out.uns_scalars.emplace_back("kotml_prep/pca_residual", pca_result.residual);
    out.uns_scalars.emplace_back("kotml_prep/pca_seed", static_cast<double>(o.pca.seed));
    out.uns_strings.emplace_back("kotml_prep/pca_operator", to_string(pca_result.op));
    out.uns_strings.emplace_back("kotml_prep/pca_solver", to_string(pca_result.solver));
  }
  if (o.normalize) out.uns_scalars.emplace_back("kotml_prep/target_sum", o.target_sum);
  out.uns_strings.emplace_back("kotml_prep/input", o.input);
  stage("assembled the output");
  io::write_anndata(o.output, out);
  stage("wrote " + o.output);
  return report;
}

}  // namespace kotml::data
