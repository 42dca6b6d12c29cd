#pragma once
// AnnData (.h5ad) reading and writing on the HDF5 C API.
//
// Reads what anndata 0.7 and later write:
//  * X, raw/X, layers/<k>, obsm/<k>, varm/<k>, obsp/<k>: dense arrays of any integer
//    or float width, CSR and CSC groups (encoding "csr_matrix"/"csc_matrix", or the
//    legacy h5sparse_format/h5sparse_shape attributes), int32 or int64 indptr/indices;
//  * obs/var dataframes: encoding 0.2.0 (categorical groups, string-array,
//    nullable-integer/-boolean/-string-array, numeric and bool arrays) and 0.1.0
//    (anndata 0.7: categorical codes whose 'categories' attribute is an object
//    reference into __categories/);
//  * uns: dict groups, numeric-scalar and string scalars, arrays.
// Rows are read selectively: read_rows on a CSR matrix reads only the needed
// slices of indptr, indices and data, so one donor's cells never cost a pass over
// the cohort.
//
// Writes files that anndata.read_h5ad opens (encoding 0.1.0 root, 0.2.0 frames),
// always atomically (temporary name, then rename).
//
// Every problem with a file is a kotml::Error naming the file and the element.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kotml/io/hdf5.hpp"

namespace kotml::io {

/// dataframe: an obsm/varm entry stored as a data frame (rows = its length,
/// cols = its number of columns); it is described but not read as a matrix.
enum class MatrixStorage { dense, csr, csc, dataframe };

std::string to_string(MatrixStorage storage);  // "dense", "csr", "csc", "dataframe"

struct MatrixInfo {
  std::string element;  // the HDF5 path, e.g. "X", "layers/counts"
  MatrixStorage storage = MatrixStorage::dense;
  std::string dtype;    // of the values: "float32", "int64", "bool", ...
  std::int64_t rows = 0, cols = 0;
  /// Stored values: non-zeros for sparse storage, rows*cols for dense.
  std::int64_t nnz = 0;
  std::string index_dtype;  // sparse only: dtype of indices ("int32"/"int64")
};

/// Column indices of a sparse matrix in memory: 32 bits, the width scipy and
/// anndata store whenever the columns allow, so a whole matrix is read without
/// conversion and holds a third less memory than with 64-bit indices. Offsets
/// (indptr) stay 64-bit: non-zeros pass 2^31 from about a million cells. A
/// matrix with 2^31 columns or more is refused when read.
using SparseIndex = std::int32_t;

template <class T>
struct CsrMatrix {
  std::int64_t rows = 0, cols = 0;
  std::vector<std::int64_t> indptr;  // rows + 1 offsets
  std::vector<SparseIndex> indices;  // column of each value, sorted within a row when the file's are
  std::vector<T> values;
};

enum class ColumnKind { categorical, string, numeric, boolean, nullable_integer, nullable_boolean, nullable_string };

std::string to_string(ColumnKind kind);  // "categorical", "string", "numeric", "bool", "nullable-integer", ...

/// One obs/var column, decoded.
struct Column {
  std::string name;
  ColumnKind kind = ColumnKind::numeric;
  /// Storage dtype: codes' dtype for categoricals ("int8", "int16"), values'
  /// dtype otherwise ("float64", "int32", "bool", "string").
  std::string dtype;
  std::vector<std::string> categories;  // categorical
  std::vector<std::int32_t> codes;      // categorical; code -1 = missing
  bool ordered = false;                 // categorical
  std::vector<double> numbers;          // numeric / boolean (0/1) / nullable_integer / nullable_boolean
  std::vector<std::string> strings;     // string / nullable_string
  std::vector<std::uint8_t> missing;    // 1 where missing (nullable kinds, categorical code -1); may be empty = none

  std::int64_t size() const;
  bool is_missing(std::int64_t row) const {
    return !missing.empty() && missing[static_cast<std::size_t>(row)] != 0;
  }
  /// The label of each row: category name, string, or number as text (integers
  /// without a decimal point, bools "True"/"False" as pandas prints them).
  /// Missing rows give "". Used for donors and labels.
  std::vector<std::string> as_strings() const;
};

/// An integer column's value as text, as as_strings() gives it: exact for
/// int64 and uint64 values (which past 2^63 do not fit a long long).
std::string integer_text(double value);

/// What an element is, for listing (kotml info): its anndata encoding-type (or
/// what it looks like when it has none), the dtype and shape.
struct ElementSummary {
  std::string element;
  std::string encoding;  // "array", "csr_matrix", "dict", "dataframe", "string", "numeric-scalar", ...
  std::string dtype;     // empty for groups
  std::vector<std::int64_t> shape;  // matrix/array shape; empty for scalars and dicts
};

class AnnDataReader {
 public:
  /// Opens path. Error if it is missing, not HDF5, unreadable, or not AnnData
  /// (no obs/var frames, or inconsistent lengths).
  explicit AnnDataReader(const std::string& path);
  /// The same checks on a file already open (an in-memory image, for example).
  explicit AnnDataReader(h5::File file);
  AnnDataReader(AnnDataReader&&) noexcept;
  AnnDataReader& operator=(AnnDataReader&&) noexcept;
  ~AnnDataReader();

  const std::string& path() const;
  /// The underlying HDF5 file, for elements this class does not decode.
  const h5::File& file() const;
  /// "0.1.0" for anndata >= 0.8 files; "" for anndata 0.7 files (no root encoding).
  const std::string& encoding_version() const;

  std::int64_t n_obs() const;
  std::int64_t n_vars() const;

  /// "X", "raw/X", "layers/<k>", "obsm/<k>", "varm/<k>", "obsp/<k>", "varp/<k>".
  /// Error naming the element if absent or not a matrix.
  MatrixInfo matrix_info(const std::string& element = "X") const;
  bool has(const std::string& element) const;
  bool has_x() const;
  bool has_raw() const;
  /// Length of raw/var's index (raw can have more variables than X).
  std::int64_t raw_n_vars() const;

  std::vector<std::string> layers() const;
  std::vector<std::string> obsm_keys() const;
  std::vector<std::string> varm_keys() const;
  std::vector<std::string> obsp_keys() const;
  std::vector<std::string> varp_keys() const;
  std::vector<std::string> uns_keys() const;
  /// Encoding, dtype and shape of any element (uns entries, obsm entries of any kind).
  ElementSummary describe(const std::string& element) const;

  /// Columns in the frame's column-order (the index excluded).
  std::vector<std::string> obs_columns() const;
  std::vector<std::string> var_columns() const;
  /// Error naming the file and column if the column does not exist.
  Column obs(const std::string& column) const;
  Column var(const std::string& column) const;
  /// Any dataframe's column (e.g. "raw/var", or a dataframe in obsm).
  Column frame_column(const std::string& frame, const std::string& column) const;
  std::vector<std::string> frame_columns(const std::string& frame) const;
  std::vector<std::string> obs_names() const;
  std::vector<std::string> var_names() const;

  /// Dense row-major copy of the selected rows (any storage, any dtype; CSC is
  /// converted), in the given order; repeats allowed.
  template <class T>
  std::vector<T> read_rows(const std::string& element, const std::vector<std::int64_t>& rows) const;
  /// The whole matrix, dense row-major.
  template <class T>
  std::vector<T> read_dense(const std::string& element) const;
  /// The whole matrix as CSR (dense and CSC converted; explicit zeros of a
  /// dense matrix are dropped).
  template <class T>
  CsrMatrix<T> read_csr(const std::string& element) const;
  /// Selected rows as CSR (rows in the given order), reading only their slices.
  template <class T>
  CsrMatrix<T> read_csr_rows(const std::string& element, const std::vector<std::int64_t>& rows) const;
  /// Rows [begin, end) as CSR, as read_csr gives them: a rank's block of cells.
  /// CSR storage reads the block's slices in one piece each; CSC storage
  /// streams the columns and keeps the block's entries (never dense); dense
  /// storage reads the rows and drops their zeros.
  template <class T>
  CsrMatrix<T> read_csr_row_range(const std::string& element, std::int64_t begin, std::int64_t end) const;

  /// uns entries; key may be nested ("neighbors/params/k"). Error if absent or
  /// of another kind.
  double uns_number(const std::string& key) const;
  std::string uns_string(const std::string& key) const;
  std::vector<double> uns_array(const std::string& key, std::vector<std::int64_t>* shape = nullptr) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// What write_anndata writes. Columns use the same Column type the reader
/// returns: categorical (categories + codes, -1 missing, ordered), string,
/// numeric (numbers; stored as Column::dtype when that names an integer or float
/// type, else float64), boolean, nullable_integer, nullable_boolean (numbers +
/// missing) and nullable_string (strings + missing).
struct AnnDataContent {
  std::int64_t n_obs = 0, n_vars = 0;
  std::vector<float> x_dense;  // n_obs * n_vars row-major, when !x_is_sparse
  CsrMatrix<float> x_csr;      // when x_is_sparse
  bool x_is_sparse = false;
  std::vector<std::string> obs_names, var_names;  // empty: "0", "1", ... as anndata does
  std::vector<Column> obs_columns, var_columns;
  /// name -> (row-major data, shape). obsm entries have n_obs rows, varm n_vars.
  std::vector<std::pair<std::string, std::pair<std::vector<double>, std::vector<std::int64_t>>>> obsm,
      varm, uns_arrays;
  /// uns names may be nested ("params/k"): intermediate dicts are created.
  std::vector<std::pair<std::string, double>> uns_scalars;
  std::vector<std::pair<std::string, std::string>> uns_strings;
  std::vector<std::pair<std::string, CsrMatrix<float>>> layers;  // n_obs × n_vars each
  /// Layers with sparse X's stored pattern: only their values, in X's order.
  /// Each is written as a full CSR group whose indices and indptr are HDF5 hard
  /// links to X's (one copy on disk; every reader sees an ordinary CSR group).
  std::vector<std::pair<std::string, std::vector<float>>> layers_with_x_pattern;
  /// layers, obsm and varm entries ("layers/spliced", "obsm/X_umap") copied byte
  /// for byte from the AnnData file copy_source (File::copy_from): carried-over
  /// content is neither decoded nor re-encoded, so its dtype, encoding and
  /// compression stay the source's. The caller checks their shapes.
  std::string copy_source;
  std::vector<std::string> copied;
  /// gzip level for X, layers and obsm (0 = none, as anndata's default).
  int compression_level = 0;
};

/// Writes content to path atomically (AtomicFile). Error naming the element on
/// inconsistent content (lengths, indices out of range) before anything is written.
void write_anndata(const std::string& path, const AnnDataContent& content);

/// Copies the AnnData file `source` to `target` (atomically) with obs columns
/// added, or replaced when one of that name exists; everything else is copied
/// byte for byte. Error naming the column when one does not fit obs.
void copy_with_obs_columns(const std::string& source, const std::string& target,
                           const std::vector<Column>& columns);

}  // namespace kotml::io
