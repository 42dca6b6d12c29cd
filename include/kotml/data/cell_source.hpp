#pragma once
// Where a cohort's cells come from: an .h5ad file (AnnDataSource) or a table in
// memory (TableSource: simulated cohorts, tests). The cohort builder asks only for
// obs labels and for the feature rows of selected cells, so a rank never reads
// more of a file than the donors it needs.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kotml::io {
class AnnDataReader;
}

namespace kotml::data {

class CellSource {
 public:
  virtual ~CellSource() = default;

  /// File path or description, for error messages.
  virtual std::string name() const = 0;
  virtual std::int64_t n_obs() const = 0;
  virtual std::vector<std::string> obs_columns() const = 0;
  /// One string per cell; a missing value (categorical code -1, missing nullable
  /// entry) is "". Error naming the column if it does not exist.
  virtual std::vector<std::string> obs_labels(const std::string& column) const = 0;
  /// True for numeric columns: their labels sort by value, as numpy.unique does.
  virtual bool obs_is_numeric(const std::string& column) const { return false; }

  /// Keys below "layers" or "obsm".
  virtual std::vector<std::string> keys(const std::string& group) const = 0;
  /// Columns of an element ("X", "layers/<k>", "obsm/<k>"); Error if it is absent,
  /// not a 2-D matrix with n_obs rows, or wider than max_features.
  virtual std::int64_t n_features(const std::string& element) const = 0;
  static constexpr std::int64_t max_features = 2147483647;
  virtual std::vector<std::string> var_names() const = 0;
  /// Dense row-major copy of the given rows (in the given order).
  virtual std::vector<float> read_rows(const std::string& element,
                                       const std::vector<std::int64_t>& rows) const = 0;
  /// varm matrix (n_vars × k, row-major) if present, else empty.
  virtual std::vector<double> varm(const std::string& key, std::int64_t& columns) const = 0;
};

/// Reads an .h5ad through io::AnnDataReader (opened once, per rank).
class AnnDataSource : public CellSource {
 public:
  explicit AnnDataSource(const std::string& path);
  explicit AnnDataSource(io::AnnDataReader reader);
  ~AnnDataSource() override;
  std::string name() const override;
  std::int64_t n_obs() const override;
  std::vector<std::string> obs_columns() const override;
  std::vector<std::string> obs_labels(const std::string& column) const override;
  bool obs_is_numeric(const std::string& column) const override;
  std::vector<std::string> keys(const std::string& group) const override;
  std::int64_t n_features(const std::string& element) const override;
  std::vector<std::string> var_names() const override;
  std::vector<float> read_rows(const std::string& element,
                               const std::vector<std::int64_t>& rows) const override;
  std::vector<double> varm(const std::string& key, std::int64_t& columns) const override;

 private:
  std::unique_ptr<io::AnnDataReader> reader_;
};

/// A cells × features table in memory: X, optional obsm embeddings, obs string
/// columns. What simulators produce before writing, and what tests build cohorts
/// from without a file.
class TableSource : public CellSource {
 public:
  TableSource(std::string name, std::int64_t n_obs, std::int64_t n_vars, std::vector<float> x);

  void set_var_names(std::vector<std::string> names);
  void add_obs(const std::string& column, std::vector<std::string> values);
  /// Declares an obs column numeric (its labels are numbers written as text).
  void mark_numeric(const std::string& column);
  void add_obsm(const std::string& key, std::int64_t columns, std::vector<float> values);

  std::string name() const override { return name_; }
  std::int64_t n_obs() const override { return n_obs_; }
  std::vector<std::string> obs_columns() const override;
  std::vector<std::string> obs_labels(const std::string& column) const override;
  bool obs_is_numeric(const std::string& column) const override;
  std::vector<std::string> keys(const std::string& group) const override;
  std::int64_t n_features(const std::string& element) const override;
  std::vector<std::string> var_names() const override { return var_names_; }
  std::vector<float> read_rows(const std::string& element,
                               const std::vector<std::int64_t>& rows) const override;
  std::vector<double> varm(const std::string& key, std::int64_t& columns) const override;

 private:
  struct Matrix {
    std::int64_t columns = 0;
    std::vector<float> values;
  };
  const Matrix& matrix(const std::string& element) const;

  std::string name_;
  std::int64_t n_obs_ = 0;
  Matrix x_;
  std::vector<std::string> var_names_;
  std::vector<std::pair<std::string, std::vector<std::string>>> obs_;
  std::vector<std::string> numeric_;
  std::map<std::string, Matrix> obsm_;
};

}  // namespace kotml::data
