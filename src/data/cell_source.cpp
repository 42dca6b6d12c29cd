// Cell sources: an .h5ad through the io reader, or a table in memory.

#include "kotml/data/cell_source.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/io/anndata.hpp"

namespace kotml::data {
namespace {

std::string join(const std::vector<std::string>& items) {
  if (items.empty()) return "none";
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

/// "layers/<k>" or "obsm/<k>" must name an existing key; say which exist if not.
void require_key(const CellSource& source, const std::string& element) {
  if (element == "X") return;
  const auto slash = element.find('/');
  const std::string group = element.substr(0, slash);
  const std::string key = element.substr(slash + 1);
  const auto keys = source.keys(group);
  if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
    const std::string what = group == "obsm" ? "embedding" : "layer";
    throw Error(source.name(), element, "no such " + what + " (available: " + join(keys) + ")");
  }
}

}  // namespace

// ------------------------------------------------------------------ AnnDataSource
AnnDataSource::AnnDataSource(const std::string& path) : reader_(std::make_unique<io::AnnDataReader>(path)) {}
AnnDataSource::AnnDataSource(io::AnnDataReader reader)
    : reader_(std::make_unique<io::AnnDataReader>(std::move(reader))) {}
AnnDataSource::~AnnDataSource() = default;

std::string AnnDataSource::name() const { return reader_->path(); }
std::int64_t AnnDataSource::n_obs() const { return reader_->n_obs(); }
std::vector<std::string> AnnDataSource::obs_columns() const { return reader_->obs_columns(); }

std::vector<std::string> AnnDataSource::obs_labels(const std::string& column) const {
  const auto columns = reader_->obs_columns();
  if (std::find(columns.begin(), columns.end(), column) == columns.end())
    throw Error(name(), "obs/" + column, "no such obs column (available: " + join(columns) + ")");
  return reader_->obs(column).as_strings();
}

bool AnnDataSource::obs_is_numeric(const std::string& column) const {
  const auto kind = reader_->obs(column).kind;
  return kind == io::ColumnKind::numeric || kind == io::ColumnKind::nullable_integer;
}

std::vector<std::string> AnnDataSource::keys(const std::string& group) const {
  if (group == "layers") return reader_->layers();
  if (group == "obsm") return reader_->obsm_keys();
  if (group == "varm") return reader_->varm_keys();
  return {};
}

std::int64_t AnnDataSource::n_features(const std::string& element) const {
  require_key(*this, element);
  const auto info = reader_->matrix_info(element);
  if (info.storage == io::MatrixStorage::dataframe)
    throw Error(name(), element, "is a data frame, not a matrix of features");
  if (info.rows != n_obs())
    throw Error(name(), element,
                "has " + std::to_string(info.rows) + " rows but obs has " + std::to_string(n_obs()));
  // A shape is only what the file says: a chunked dataset may declare any
  // size without storing it. Past int32 column indices (AnnData's usual
  // sparse index type) no cell's row is a real one; before this check such a
  // file failed as "out of memory" (found by fuzz_h5ad).
  if (info.cols > max_features)
    throw Error(name(), element,
                "has " + std::to_string(info.cols) + " columns: more than the " + std::to_string(max_features) +
                    " features a cell can have");
  return info.cols;
}

std::vector<std::string> AnnDataSource::var_names() const { return reader_->var_names(); }

std::vector<float> AnnDataSource::read_rows(const std::string& element,
                                            const std::vector<std::int64_t>& rows) const {
  return reader_->read_rows<float>(element, rows);
}

std::vector<double> AnnDataSource::varm(const std::string& key, std::int64_t& columns) const {
  columns = 0;
  const auto keys = reader_->varm_keys();
  if (std::find(keys.begin(), keys.end(), key) == keys.end()) return {};
  const auto info = reader_->matrix_info("varm/" + key);
  if (info.storage == io::MatrixStorage::dataframe || info.rows != reader_->n_vars()) return {};
  columns = info.cols;
  return reader_->read_dense<double>("varm/" + key);
}

// ------------------------------------------------------------------ TableSource
TableSource::TableSource(std::string name, std::int64_t n_obs, std::int64_t n_vars, std::vector<float> x)
    : name_(std::move(name)), n_obs_(n_obs) {
  if (static_cast<std::int64_t>(x.size()) != n_obs * n_vars)
    throw Error(name_, "X", "table has " + std::to_string(x.size()) + " values, expected " +
                                std::to_string(n_obs * n_vars));
  x_.columns = n_vars;
  x_.values = std::move(x);
  for (std::int64_t j = 0; j < n_vars; ++j) var_names_.push_back(std::to_string(j));
}

void TableSource::set_var_names(std::vector<std::string> names) {
  if (static_cast<std::int64_t>(names.size()) != x_.columns)
    throw Error(name_, "var", "wrong number of variable names");
  var_names_ = std::move(names);
}

void TableSource::add_obs(const std::string& column, std::vector<std::string> values) {
  if (static_cast<std::int64_t>(values.size()) != n_obs_)
    throw Error(name_, "obs/" + column, "column length differs from the number of cells");
  obs_.emplace_back(column, std::move(values));
}

void TableSource::mark_numeric(const std::string& column) { numeric_.push_back(column); }

bool TableSource::obs_is_numeric(const std::string& column) const {
  return std::find(numeric_.begin(), numeric_.end(), column) != numeric_.end();
}

void TableSource::add_obsm(const std::string& key, std::int64_t columns, std::vector<float> values) {
  if (static_cast<std::int64_t>(values.size()) != n_obs_ * columns)
    throw Error(name_, "obsm/" + key, "embedding size differs from cells × columns");
  obsm_[key] = Matrix{columns, std::move(values)};
}

std::vector<std::string> TableSource::obs_columns() const {
  std::vector<std::string> names;
  for (const auto& [name, values] : obs_) names.push_back(name);
  return names;
}

std::vector<std::string> TableSource::obs_labels(const std::string& column) const {
  for (const auto& [name, values] : obs_)
    if (name == column) return values;
  throw Error(name_, "obs/" + column, "no such obs column (available: " + join(obs_columns()) + ")");
}

std::vector<std::string> TableSource::keys(const std::string& group) const {
  std::vector<std::string> out;
  if (group == "obsm")
    for (const auto& [key, m] : obsm_) out.push_back(key);
  return out;
}

const TableSource::Matrix& TableSource::matrix(const std::string& element) const {
  if (element == "X") return x_;
  require_key(*this, element);
  return obsm_.at(element.substr(element.find('/') + 1));
}

std::int64_t TableSource::n_features(const std::string& element) const { return matrix(element).columns; }

std::vector<float> TableSource::read_rows(const std::string& element,
                                          const std::vector<std::int64_t>& rows) const {
  const auto& m = matrix(element);
  std::vector<float> out;
  out.reserve(rows.size() * static_cast<std::size_t>(m.columns));
  for (const auto r : rows) {
    if (r < 0 || r >= n_obs_) throw Error(name_, element, "row " + std::to_string(r) + " out of range");
    out.insert(out.end(), m.values.begin() + r * m.columns, m.values.begin() + (r + 1) * m.columns);
  }
  return out;
}

std::vector<double> TableSource::varm(const std::string&, std::int64_t& columns) const {
  columns = 0;
  return {};
}

}  // namespace kotml::data
