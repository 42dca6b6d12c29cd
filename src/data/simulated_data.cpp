// SimulatedData: accessors, an in-memory cell source, and the .h5ad writer.

#include <algorithm>
#include <string>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/data/cell_source.hpp"
#include "kotml/data/simulate.hpp"
#include "kotml/io/anndata.hpp"

namespace kotml::data {
namespace {

io::Column categorical(const std::string& name, const std::vector<std::string>& values) {
  io::Column column;
  column.name = name;
  column.kind = io::ColumnKind::categorical;
  column.categories = values;
  std::sort(column.categories.begin(), column.categories.end());
  column.categories.erase(std::unique(column.categories.begin(), column.categories.end()),
                          column.categories.end());
  column.dtype = column.categories.size() < 128 ? "int8" : "int32";
  column.codes.reserve(values.size());
  for (const auto& v : values)
    column.codes.push_back(static_cast<std::int32_t>(
        std::lower_bound(column.categories.begin(), column.categories.end(), v) - column.categories.begin()));
  return column;
}

io::Column numeric(const std::string& name, const std::vector<double>& values) {
  io::Column column;
  column.name = name;
  column.kind = io::ColumnKind::numeric;
  column.dtype = "float64";
  column.numbers = values;
  return column;
}

}  // namespace

const std::vector<std::string>& SimulatedData::obs_column(const std::string& name) const {
  for (const auto& [key, values] : obs)
    if (key == name) return values;
  throw Error("", "obs/" + name, "no such simulated column");
}

const SimulatedData::Array& SimulatedData::uns_array(const std::string& name) const {
  for (const auto& a : uns)
    if (a.name == name) return a;
  throw Error("", "uns/" + name, "no such simulated array");
}

const SimulatedData::Array& SimulatedData::obsm_array(const std::string& name) const {
  for (const auto& a : obsm)
    if (a.name == name) return a;
  throw Error("", "obsm/" + name, "no such simulated embedding");
}

float SimulatedData::value(std::int64_t i, std::int64_t j) const {
  if (!sparse) return x[static_cast<std::size_t>(i * n_vars + j)];
  const auto begin = indices.begin() + indptr[i], end = indices.begin() + indptr[i + 1];
  const auto it = std::lower_bound(begin, end, j);
  return it != end && *it == j ? values[static_cast<std::size_t>(it - indices.begin())] : 0.0f;
}

TableSource SimulatedData::table() const {
  std::vector<float> dense;
  if (sparse) {
    dense.assign(static_cast<std::size_t>(n_obs * n_vars), 0.0f);
    for (std::int64_t i = 0; i < n_obs; ++i)
      for (std::int64_t p = indptr[i]; p < indptr[i + 1]; ++p) dense[i * n_vars + indices[p]] = values[p];
  } else {
    dense = x;
  }
  TableSource source("simulated " + kind, n_obs, n_vars, std::move(dense));
  source.set_var_names(var_names);
  for (const auto& [name, column] : obs) source.add_obs(name, column);
  for (const auto& a : obsm)
    source.add_obsm(a.name, a.shape.size() > 1 ? a.shape[1] : 1,
                    std::vector<float>(a.values.begin(), a.values.end()));
  return source;
}

void write_h5ad(const std::string& path, const SimulatedData& data) {
  io::AnnDataContent content;
  content.n_obs = data.n_obs;
  content.n_vars = data.n_vars;
  content.x_is_sparse = data.sparse;
  if (data.sparse) {
    content.x_csr.rows = data.n_obs;
    content.x_csr.cols = data.n_vars;
    content.x_csr.indptr = data.indptr;
    content.x_csr.indices = data.indices;
    content.x_csr.values = data.values;
  } else {
    content.x_dense = data.x;
  }
  content.var_names = data.var_names;
  for (const auto& [name, values] : data.obs) content.obs_columns.push_back(categorical(name, values));
  for (const auto& [name, values] : data.obs_numeric) content.obs_columns.push_back(numeric(name, values));
  for (const auto& [name, values] : data.var_numeric) {
    auto column = numeric(name, values);
    // 0/1 flags read best as pandas booleans.
    if (std::all_of(values.begin(), values.end(), [](double v) { return v == 0.0 || v == 1.0; })) {
      column.kind = io::ColumnKind::boolean;
      column.dtype = "bool";
    }
    content.var_columns.push_back(std::move(column));
  }
  for (const auto& a : data.obsm) content.obsm.push_back({a.name, {a.values, a.shape}});
  for (const auto& a : data.uns) content.uns_arrays.push_back({a.name, {a.values, a.shape}});
  content.uns_scalars = data.uns_scalars;
  content.uns_strings = data.uns_strings;
  io::write_anndata(path, content);
}

}  // namespace kotml::data
