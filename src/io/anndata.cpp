#include "kotml/io/anndata.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "kotml/core/atomic_file.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/large_vector.hpp"
#include "index_range.hpp"

namespace kotml::io {

std::string to_string(MatrixStorage storage) {
  switch (storage) {
    case MatrixStorage::dense: return "dense";
    case MatrixStorage::csr: return "csr";
    case MatrixStorage::csc: return "csc";
    case MatrixStorage::dataframe: return "dataframe";
  }
  return "?";
}

std::string to_string(ColumnKind kind) {
  switch (kind) {
    case ColumnKind::categorical: return "categorical";
    case ColumnKind::string: return "string";
    case ColumnKind::numeric: return "numeric";
    case ColumnKind::boolean: return "bool";
    case ColumnKind::nullable_integer: return "nullable-integer";
    case ColumnKind::nullable_boolean: return "nullable-boolean";
    case ColumnKind::nullable_string: return "nullable-string";
  }
  return "?";
}

// ================================================================== Column

namespace {

bool is_integer_dtype(const std::string& dtype) {
  return dtype.rfind("int", 0) == 0 || dtype.rfind("uint", 0) == 0;
}

/// Python's repr of a float: shortest round-trip digits, always with a '.' or
/// an exponent, so labels read as pandas would print them.
std::string float_text(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, then Python's layout: positional for decimal
  // exponents in [-4, 16), scientific with a two-digit exponent otherwise.
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  const std::string sci(buffer, result.ptr);
  const auto e = sci.find('e');
  const int exponent = std::stoi(sci.substr(e + 1));
  std::string digits;
  const bool negative = sci[0] == '-';
  for (std::size_t i = negative ? 1 : 0; i < e; ++i)
    if (sci[i] != '.') digits += sci[i];
  std::string text = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      text += "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
    } else {
      const auto integer_digits = static_cast<std::size_t>(exponent) + 1;
      if (digits.size() <= integer_digits)
        text += digits + std::string(integer_digits - digits.size(), '0') + ".0";
      else
        text += digits.substr(0, integer_digits) + "." + digits.substr(integer_digits);
    }
    return text;
  }
  text += digits.substr(0, 1);
  if (digits.size() > 1) text += "." + digits.substr(1);
  const int magnitude = exponent < 0 ? -exponent : exponent;
  text += std::string("e") + (exponent < 0 ? "-" : "+") + (magnitude < 10 ? "0" : "") +
          std::to_string(magnitude);
  return text;
}

}  // namespace

std::string integer_text(double value) {
  // uint64 columns reach 2^64; a cast to long long past 2^63 is undefined.
  if (value >= -0x1p63 && value < 0x1p63) return std::to_string(static_cast<long long>(value));
  if (value >= 0 && value < 0x1p64) return std::to_string(static_cast<unsigned long long>(value));
  return float_text(value);
}

std::int64_t Column::size() const {
  switch (kind) {
    case ColumnKind::categorical: return static_cast<std::int64_t>(codes.size());
    case ColumnKind::string:
    case ColumnKind::nullable_string: return static_cast<std::int64_t>(strings.size());
    default: return static_cast<std::int64_t>(numbers.size());
  }
}

std::vector<std::string> Column::as_strings() const {
  const auto n = static_cast<std::size_t>(size());
  std::vector<std::string> labels(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (is_missing(static_cast<std::int64_t>(i))) continue;
    switch (kind) {
      case ColumnKind::categorical:
        if (codes[i] >= 0 && static_cast<std::size_t>(codes[i]) < categories.size())
          labels[i] = categories[static_cast<std::size_t>(codes[i])];
        break;
      case ColumnKind::string:
      case ColumnKind::nullable_string: labels[i] = strings[i]; break;
      case ColumnKind::boolean:
      case ColumnKind::nullable_boolean: labels[i] = numbers[i] != 0 ? "True" : "False"; break;
      case ColumnKind::nullable_integer: labels[i] = integer_text(numbers[i]); break;
      case ColumnKind::numeric:
        labels[i] = is_integer_dtype(dtype) ? integer_text(numbers[i]) : float_text(numbers[i]);
        break;
    }
  }
  return labels;
}

// =============================================================== reading

namespace {

std::string join(const std::string& a, const std::string& b) {
  if (a.empty() || a == "/") return b;
  return a + "/" + b;
}

std::string list_for_message(const std::vector<std::string>& names) {
  if (names.empty()) return "(none)";
  std::string text;
  const std::size_t shown = std::min<std::size_t>(names.size(), 12);
  for (std::size_t i = 0; i < shown; ++i) text += (i ? ", " : "") + names[i];
  if (shown < names.size()) text += ", ... (" + std::to_string(names.size()) + " in all)";
  return text;
}

std::string encoding_of(const h5::File& file, const std::string& element) {
  if (!file.has_attribute(element, "encoding-type")) return "";
  return file.read_string_attribute(element, "encoding-type");
}

/// Where the value arrays of a stored column live, and how long it is.
std::int64_t column_length(const h5::File& file, const std::string& element) {
  if (file.is_dataset(element)) {
    const auto shape = file.shape(element);
    if (shape.size() != 1)
      throw Error(file.path(), element, "expected a 1-D column, found " +
                                            std::to_string(shape.size()) + " dimensions");
    return shape[0];
  }
  if (file.is_group(element)) {
    for (const char* part : {"codes", "values"})
      if (file.is_dataset(join(element, part))) return column_length(file, join(element, part));
    throw Error(file.path(), element, "is a group without codes or values; not a column");
  }
  throw Error(file.path(), element, "no such column");
}

struct Sparse {
  MatrixStorage storage;
  std::int64_t rows, cols;
};

}  // namespace

struct AnnDataReader::State {
  explicit State(h5::File opened) : file(std::move(opened)) {}
  h5::File file;
  std::string encoding_version;
  std::int64_t n_obs = 0, n_vars = 0;

  const std::string& path() const { return file.path(); }

  std::string frame_index(const std::string& frame) const {
    if (file.has_attribute(frame, "_index")) return file.read_string_attribute(frame, "_index");
    if (file.exists(join(frame, "_index"))) return "_index";
    if (file.exists(join(frame, "index"))) return "index";
    throw Error(path(), frame, "dataframe has no '_index' attribute; not an AnnData dataframe");
  }

  void require_frame(const std::string& frame) const {
    if (file.is_dataset(frame))
      throw Error(path(), frame,
                  "stored as a compound dataset (anndata < 0.7 layout), which kotml does not "
                  "read; rewrite the file with anndata >= 0.7");
    if (!file.is_group(frame)) throw Error(path(), frame, "missing: not an AnnData dataframe");
    const std::string enc = encoding_of(file, frame);
    if (!enc.empty() && enc != "dataframe")
      throw Error(path(), frame, "encoding-type is '" + enc + "', expected 'dataframe'");
  }

  std::int64_t frame_length(const std::string& frame) const {
    require_frame(frame);
    return column_length(file, join(frame, frame_index(frame)));
  }

  std::vector<std::string> columns_of(const std::string& frame) const {
    require_frame(frame);
    if (file.has_attribute(frame, "column-order"))
      return file.read_string_array_attribute(frame, "column-order");
    // Without column-order, every member except the index and 0.7's category store.
    const std::string index = frame_index(frame);
    std::vector<std::string> names;
    for (const auto& child : file.children(frame))
      if (child != index && child != "__categories") names.push_back(child);
    return names;
  }

  Column decode(const std::string& frame, const std::string& name, std::int64_t expected_length) const;

  Sparse sparse_layout(const std::string& element) const;
  MatrixInfo describe_matrix(const std::string& element) const;
  /// Matrix facts are looked up once per element: a donor loop asks for them
  /// on every read, and each lookup costs a dozen HDF5 metadata calls.
  MatrixInfo info(const std::string& element) const {
    if (auto it = info_cache.find(element); it != info_cache.end()) return it->second;
    return info_cache.emplace(element, describe_matrix(element)).first->second;
  }
  mutable std::map<std::string, MatrixInfo> info_cache;
};

// ------------------------------------------------------------------ columns

namespace {

std::vector<std::string> read_labels(const h5::File& file, const std::string& dataset) {
  const auto type = file.type(dataset);
  if (type.is_string) return file.read_strings(dataset);
  const auto values = file.read<double>(dataset);
  std::vector<std::string> labels(values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    labels[i] = type.is_bool ? (values[i] != 0 ? "True" : "False")
                             : type.is_integer ? integer_text(values[i]) : float_text(values[i]);
  return labels;
}

/// Categories are an array, or (pandas string dtype) a nullable-string-array group.
std::vector<std::string> read_category_labels(const h5::File& file, const std::string& element) {
  if (file.is_dataset(element)) return read_labels(file, element);
  if (encoding_of(file, element) == "nullable-string-array" && file.is_dataset(join(element, "values")))
    return file.read_strings(join(element, "values"));
  throw Error(file.path(), element, "categories are neither an array nor a nullable-string-array");
}

void check_codes(const h5::File& file, const std::string& element, const Column& column) {
  const auto n_categories = static_cast<std::int64_t>(column.categories.size());
  for (std::size_t i = 0; i < column.codes.size(); ++i) {
    const auto code = column.codes[i];
    if (code < -1 || code >= n_categories)
      throw Error(file.path(), element,
                  "category code " + std::to_string(code) + " at row " + std::to_string(i) +
                      " is outside [-1, " + std::to_string(n_categories) + ") (damaged file?)");
  }
}

void set_missing_from_codes(Column& column) {
  if (std::none_of(column.codes.begin(), column.codes.end(), [](std::int32_t c) { return c < 0; }))
    return;
  column.missing.resize(column.codes.size());
  for (std::size_t i = 0; i < column.codes.size(); ++i) column.missing[i] = column.codes[i] < 0;
}

}  // namespace

Column AnnDataReader::State::decode(const std::string& frame, const std::string& name,
                                    std::int64_t expected_length) const {
  const std::string element = join(frame, name);
  if (!file.exists(element)) {
    throw Error(path(), element,
                "no such column; columns are: " + list_for_message(columns_of(frame)));
  }
  Column column;
  column.name = name;
  const std::string enc = encoding_of(file, element);
  if (file.is_group(element)) {
    if (enc == "categorical") {
      column.kind = ColumnKind::categorical;
      const std::string codes = join(element, "codes"), categories = join(element, "categories");
      if (!file.is_dataset(codes) || !file.exists(categories))
        throw Error(path(), element, "categorical without codes and categories");
      column.dtype = file.type(codes).dtype;
      column.codes = file.read<std::int32_t>(codes);
      column.categories = read_category_labels(file, categories);
      if (file.has_attribute(element, "ordered")) {
        const auto ordered = file.read_numeric_attribute<std::int64_t>(element, "ordered");
        column.ordered = !ordered.empty() && ordered[0] != 0;
      }
      check_codes(file, element, column);
      set_missing_from_codes(column);
    } else if (enc == "nullable-integer" || enc == "nullable-boolean" ||
               enc == "nullable-string-array") {
      const std::string values = join(element, "values"), mask = join(element, "mask");
      if (!file.is_dataset(values) || !file.is_dataset(mask))
        throw Error(path(), element, enc + " column without values and mask datasets");
      column.dtype = file.type(values).dtype;
      if (enc == "nullable-string-array") {
        column.kind = ColumnKind::nullable_string;
        column.strings = file.read_strings(values);
      } else {
        column.kind = enc == "nullable-integer" ? ColumnKind::nullable_integer
                                                : ColumnKind::nullable_boolean;
        column.numbers = file.read<double>(values);
      }
      column.missing = file.read<std::uint8_t>(mask);
      if (static_cast<std::int64_t>(column.missing.size()) != column.size())
        throw Error(path(), mask, "mask length " + std::to_string(column.missing.size()) +
                                      " differs from values length " + std::to_string(column.size()));
      for (auto& m : column.missing) m = m != 0;
    } else {
      throw Error(path(), element,
                  "column encoding '" + (enc.empty() ? std::string("(none)") : enc) +
                      "' is not supported (expected categorical, nullable-integer, "
                      "nullable-boolean or nullable-string-array)");
    }
  } else {
    const auto type = file.type(element);
    if (file.has_attribute(element, "categories")) {
      // anndata 0.7: codes here, categories in a dataset the attribute references.
      column.kind = ColumnKind::categorical;
      column.dtype = type.dtype;
      column.codes = file.read<std::int32_t>(element);
      const auto attribute = file.attribute_type(element, "categories");
      if (attribute.dtype == "reference") {
        const std::string target = file.read_reference_attribute(element, "categories");
        column.categories = read_labels(file, target);
        if (file.has_attribute(target, "ordered")) {
          const auto ordered = file.read_numeric_attribute<std::int64_t>(target, "ordered");
          column.ordered = !ordered.empty() && ordered[0] != 0;
        }
      } else if (attribute.is_string) {
        column.categories = file.read_string_array_attribute(element, "categories");
      } else {
        throw Error(path(), element + "@categories", "is neither a reference nor strings");
      }
      check_codes(file, element, column);
      set_missing_from_codes(column);
    } else if (type.is_string) {
      column.kind = ColumnKind::string;
      column.dtype = "string";
      column.strings = file.read_strings(element);
    } else if (type.is_bool) {
      column.kind = ColumnKind::boolean;
      column.dtype = "bool";
      column.numbers = file.read<double>(element);
    } else if (type.is_integer || type.is_float) {
      column.kind = ColumnKind::numeric;
      column.dtype = type.dtype;
      column.numbers = file.read<double>(element);
      // NaN is pandas' missing value in a float column: a missing label, not
      // the label "nan".
      if (type.is_float && std::any_of(column.numbers.begin(), column.numbers.end(),
                                       [](double v) { return std::isnan(v); })) {
        column.missing.resize(column.numbers.size());
        for (std::size_t i = 0; i < column.numbers.size(); ++i) column.missing[i] = std::isnan(column.numbers[i]);
      }
    } else {
      throw Error(path(), element, "column of " + type.dtype + " values is not supported");
    }
    const auto shape = file.shape(element);
    if (shape.size() != 1)
      throw Error(path(), element, "expected a 1-D column, found " + std::to_string(shape.size()) +
                                       " dimensions");
  }
  if (expected_length >= 0 && column.size() != expected_length)
    throw Error(path(), element, "has " + std::to_string(column.size()) + " rows, the frame has " +
                                     std::to_string(expected_length));
  return column;
}

// ---------------------------------------------------------------- matrices

Sparse AnnDataReader::State::sparse_layout(const std::string& element) const {
  const std::string enc = encoding_of(file, element);
  Sparse s{MatrixStorage::csr, 0, 0};
  std::vector<std::int64_t> shape;
  if (enc == "csr_matrix" || enc == "csc_matrix") {
    s.storage = enc == "csr_matrix" ? MatrixStorage::csr : MatrixStorage::csc;
    if (!file.has_attribute(element, "shape"))
      throw Error(path(), element, enc + " group without a 'shape' attribute");
    shape = file.read_numeric_attribute<std::int64_t>(element, "shape");
  } else if (file.has_attribute(element, "h5sparse_format")) {
    const std::string format = file.read_string_attribute(element, "h5sparse_format");
    if (format != "csr" && format != "csc")
      throw Error(path(), element, "h5sparse_format '" + format + "' is not csr or csc");
    s.storage = format == "csr" ? MatrixStorage::csr : MatrixStorage::csc;
    if (!file.has_attribute(element, "h5sparse_shape"))
      throw Error(path(), element, "legacy sparse group without 'h5sparse_shape'");
    shape = file.read_numeric_attribute<std::int64_t>(element, "h5sparse_shape");
  } else {
    throw Error(path(), element,
                "is a group with encoding '" + (enc.empty() ? std::string("(none)") : enc) +
                    "', not a matrix");
  }
  if (shape.size() != 2 || shape[0] < 0 || shape[1] < 0)
    throw Error(path(), element, "sparse shape attribute must hold two non-negative integers");
  s.rows = shape[0];
  s.cols = shape[1];
  for (const char* part : {"data", "indices", "indptr"})
    if (!file.is_dataset(join(element, part)))
      throw Error(path(), join(element, part), "missing from the sparse matrix");
  const std::int64_t major = s.storage == MatrixStorage::csr ? s.rows : s.cols;
  const auto indptr_length = file.size(join(element, "indptr"));
  // Compared as indptr_length - 1 (a dataset's size is at least 0): a forged
  // shape of 2^63 - 1 must not overflow major + 1.
  if (indptr_length - 1 != major)
    throw Error(path(), join(element, "indptr"),
                "has " + std::to_string(indptr_length) + " entries, expected " +
                    std::to_string(static_cast<std::uint64_t>(major) + 1) + " for shape " + std::to_string(s.rows) +
                    "x" + std::to_string(s.cols));
  const auto nnz = file.size(join(element, "data"));
  if (file.size(join(element, "indices")) != nnz)
    throw Error(path(), join(element, "indices"), "length differs from data's " + std::to_string(nnz));
  return s;
}

MatrixInfo AnnDataReader::State::describe_matrix(const std::string& element) const {
  if (!file.exists(element)) throw Error(path(), element, "no such element");
  MatrixInfo info;
  info.element = element;
  if (file.is_dataset(element)) {
    const auto shape = file.shape(element);
    const auto type = file.type(element);
    if (shape.size() != 2 || !(type.is_integer || type.is_float || type.is_bool))
      throw Error(path(), element, "is not a 2-D numeric matrix (" + type.dtype + ", " +
                                       std::to_string(shape.size()) + " dimensions)");
    info.storage = MatrixStorage::dense;
    info.dtype = type.dtype;
    info.rows = shape[0];
    info.cols = shape[1];
    info.nnz = shape[0] * shape[1];
    return info;
  }
  if (encoding_of(file, element) == "dataframe") {
    info.storage = MatrixStorage::dataframe;
    info.dtype = "dataframe";
    info.rows = frame_length(element);
    info.cols = static_cast<std::int64_t>(columns_of(element).size());
    info.nnz = 0;
    return info;
  }
  const Sparse s = sparse_layout(element);
  info.storage = s.storage;
  info.rows = s.rows;
  info.cols = s.cols;
  info.dtype = file.type(join(element, "data")).dtype;
  info.index_dtype = file.type(join(element, "indices")).dtype;
  info.nnz = file.size(join(element, "data"));
  return info;
}

// ================================================================ reader

AnnDataReader::AnnDataReader(const std::string& path) : AnnDataReader(h5::File::open_read(path)) {}

AnnDataReader::AnnDataReader(h5::File opened) : state_(std::make_unique<State>(std::move(opened))) {
  auto& s = *state_;
  const auto& file = s.file;
  const std::string& path = file.path();
  if (file.has_attribute("/", "encoding-type")) {
    const std::string enc = file.read_string_attribute("/", "encoding-type");
    if (enc != "anndata")
      throw Error(path, "/", "encoding-type is '" + enc + "', not 'anndata': not an AnnData file");
    if (file.has_attribute("/", "encoding-version"))
      s.encoding_version = file.read_string_attribute("/", "encoding-version");
  }
  for (const char* frame : {"obs", "var"})
    if (!file.exists(frame))
      throw Error(path, frame, "missing: not an AnnData file (an .h5ad has obs and var frames)");
  s.n_obs = s.frame_length("obs");
  s.n_vars = s.frame_length("var");
  if (file.exists("X")) {
    const MatrixInfo x = s.info("X");
    if (x.rows != s.n_obs || x.cols != s.n_vars)
      throw Error(path, "X", "shape " + std::to_string(x.rows) + "x" + std::to_string(x.cols) +
                                 " does not match obs (" + std::to_string(s.n_obs) + ") x var (" +
                                 std::to_string(s.n_vars) + ")");
  }
}

AnnDataReader::AnnDataReader(AnnDataReader&&) noexcept = default;
AnnDataReader& AnnDataReader::operator=(AnnDataReader&&) noexcept = default;
AnnDataReader::~AnnDataReader() = default;

const std::string& AnnDataReader::path() const { return state_->file.path(); }
const h5::File& AnnDataReader::file() const { return state_->file; }
const std::string& AnnDataReader::encoding_version() const { return state_->encoding_version; }
std::int64_t AnnDataReader::n_obs() const { return state_->n_obs; }
std::int64_t AnnDataReader::n_vars() const { return state_->n_vars; }

MatrixInfo AnnDataReader::matrix_info(const std::string& element) const { return state_->info(element); }
bool AnnDataReader::has(const std::string& element) const { return state_->file.exists(element); }
bool AnnDataReader::has_x() const { return state_->file.exists("X"); }
bool AnnDataReader::has_raw() const {
  return state_->file.exists("raw/X") || state_->file.exists("raw.X");
}

std::int64_t AnnDataReader::raw_n_vars() const {
  if (state_->file.exists("raw/var")) return state_->frame_length("raw/var");
  if (state_->file.exists("raw.var")) return state_->frame_length("raw.var");
  if (has_raw()) return matrix_info(state_->file.exists("raw/X") ? "raw/X" : "raw.X").cols;
  throw Error(path(), "raw", "the file has no raw data");
}

namespace {
std::vector<std::string> keys_of(const h5::File& file, const std::string& group) {
  if (!file.exists(group)) return {};
  if (!file.is_group(group)) throw Error(file.path(), group, "is not a group");
  return file.children(group);
}
}  // namespace

std::vector<std::string> AnnDataReader::layers() const { return keys_of(state_->file, "layers"); }
std::vector<std::string> AnnDataReader::obsm_keys() const { return keys_of(state_->file, "obsm"); }
std::vector<std::string> AnnDataReader::varm_keys() const { return keys_of(state_->file, "varm"); }
std::vector<std::string> AnnDataReader::obsp_keys() const { return keys_of(state_->file, "obsp"); }
std::vector<std::string> AnnDataReader::varp_keys() const { return keys_of(state_->file, "varp"); }
std::vector<std::string> AnnDataReader::uns_keys() const { return keys_of(state_->file, "uns"); }

ElementSummary AnnDataReader::describe(const std::string& element) const {
  const auto& file = state_->file;
  if (!file.exists(element)) throw Error(path(), element, "no such element");
  ElementSummary summary;
  summary.element = element;
  summary.encoding = encoding_of(file, element);
  if (file.is_dataset(element)) {
    summary.dtype = file.type(element).dtype;
    summary.shape = file.shape(element);
    if (summary.encoding.empty()) {
      const bool scalar = summary.shape.empty();
      summary.encoding = summary.dtype == "string" ? (scalar ? "string" : "string-array")
                                                   : (scalar ? "numeric-scalar" : "array");
    }
    return summary;
  }
  if (summary.encoding == "csr_matrix" || summary.encoding == "csc_matrix" ||
      file.has_attribute(element, "h5sparse_format")) {
    const MatrixInfo info = state_->info(element);
    if (summary.encoding.empty()) summary.encoding = to_string(info.storage) + "_matrix (legacy)";
    summary.dtype = info.dtype;
    summary.shape = {info.rows, info.cols};
  } else if (summary.encoding == "dataframe") {
    const MatrixInfo info = state_->info(element);
    summary.shape = {info.rows, info.cols};
  } else if (summary.encoding.empty()) {
    summary.encoding = "dict";
  }
  return summary;
}

std::vector<std::string> AnnDataReader::obs_columns() const { return state_->columns_of("obs"); }
std::vector<std::string> AnnDataReader::var_columns() const { return state_->columns_of("var"); }
std::vector<std::string> AnnDataReader::frame_columns(const std::string& frame) const {
  return state_->columns_of(frame);
}

Column AnnDataReader::obs(const std::string& column) const {
  return state_->decode("obs", column, state_->n_obs);
}
Column AnnDataReader::var(const std::string& column) const {
  return state_->decode("var", column, state_->n_vars);
}
Column AnnDataReader::frame_column(const std::string& frame, const std::string& column) const {
  return state_->decode(frame, column, state_->frame_length(frame));
}

std::vector<std::string> AnnDataReader::obs_names() const {
  return state_->decode("obs", state_->frame_index("obs"), state_->n_obs).as_strings();
}
std::vector<std::string> AnnDataReader::var_names() const {
  return state_->decode("var", state_->frame_index("var"), state_->n_vars).as_strings();
}

// ------------------------------------------------------------ matrix data

namespace {

void check_rows(const std::string& path, const std::string& element,
                const std::vector<std::int64_t>& rows, std::int64_t n_rows) {
  for (auto r : rows)
    if (r < 0 || r >= n_rows)
      throw Error(path, element, "row " + std::to_string(r) + " lies outside its " +
                                     std::to_string(n_rows) + " rows");
}

std::vector<std::int64_t> sorted_unique(const std::vector<std::int64_t>& rows) {
  std::vector<std::int64_t> unique(rows);
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  return unique;
}

/// For each requested row, its position among the sorted unique rows.
std::vector<std::size_t> positions_in(const std::vector<std::int64_t>& unique,
                                      const std::vector<std::int64_t>& rows) {
  std::vector<std::size_t> positions(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i)
    positions[i] = static_cast<std::size_t>(
        std::lower_bound(unique.begin(), unique.end(), rows[i]) - unique.begin());
  return positions;
}

/// Validates a compressed matrix's pointers and indices, so a damaged file
/// becomes an Error rather than an out-of-bounds write.
void check_compressed(const std::string& path, const std::string& element,
                      const std::vector<std::int64_t>& indptr_slice, std::int64_t nnz) {
  for (std::size_t i = 0; i < indptr_slice.size(); ++i) {
    const auto p = indptr_slice[i];
    if (p < 0 || p > nnz || (i > 0 && p < indptr_slice[i - 1]))
      throw Error(path, join(element, "indptr"),
                  "offsets are not non-decreasing within [0, " + std::to_string(nnz) +
                      "] (damaged file?)");
  }
}

template <class Index>
void check_indices(const std::string& path, const std::string& element,
                   const std::vector<Index>& indices, std::int64_t bound) {
  for (auto j : indices)
    if (j < 0 || j >= bound)
      throw Error(path, join(element, "indices"),
                  "index " + std::to_string(j) + " lies outside [0, " + std::to_string(bound) +
                      ") (damaged file?)");
}

/// Sparse column indices are held in 32 bits (SparseIndex): a matrix with more
/// columns than they can number is refused before anything is read.
void check_index_width(const std::string& path, const std::string& element, std::int64_t cols) {
  constexpr std::int64_t most = std::int64_t(std::numeric_limits<SparseIndex>::max()) + 1;
  if (cols > most)
    throw Error(path, element,
                "has " + std::to_string(cols) + " columns; kotml numbers the columns of a sparse "
                "matrix in 32 bits (at most " + std::to_string(most) + ")");
}

/// The column indices of a CSR matrix, checked against [0, cols). Stored in 32
/// bits, as scipy and anndata write them whenever they fit, they are read
/// without conversion; stored in 64, HDF5 narrows them and refuses a value
/// that does not fit.
std::vector<SparseIndex> read_column_indices(const h5::File& file, const std::string& path,
                                             const std::string& element, std::int64_t cols) {
  auto indices = file.read<SparseIndex>(join(element, "indices"));
  const auto range = detail::index_range(indices.data(), indices.size());
  if (!indices.empty() && (range.low < 0 || range.high >= cols)) check_indices(path, element, indices, cols);
  return indices;
}

/// Every stored entry of a CSC element, column after column, streamed in
/// blocks of 2^20 values: visit(row, column, value). Its indptr and row
/// indices are checked.
template <class T, class Visit>
void stream_csc(const h5::File& file, const std::string& path, const std::string& element, const MatrixInfo& info,
                Visit&& visit) {
  const auto indptr = file.read<std::int64_t>(join(element, "indptr"));
  check_compressed(path, element, indptr, info.nnz);
  if (indptr.front() != 0 || indptr.back() != info.nnz)
    throw Error(path, join(element, "indptr"), "does not span the stored values (damaged file?)");
  constexpr std::int64_t block = std::int64_t(1) << 20;
  std::size_t column = 0;
  for (std::int64_t first = 0; first < info.nnz; first += block) {
    const std::int64_t last = std::min(info.nnz, first + block);
    const auto rows = file.read_range<std::int64_t>(join(element, "indices"), first, last);
    const auto values = file.read_range<T>(join(element, "data"), first, last);
    check_indices(path, element, rows, info.rows);
    for (std::int64_t k = first; k < last; ++k) {
      while (indptr[column + 1] <= k) ++column;
      visit(rows[static_cast<std::size_t>(k - first)], column, values[static_cast<std::size_t>(k - first)]);
    }
  }
}

}  // namespace

template <class T>
CsrMatrix<T> AnnDataReader::read_csr_rows(const std::string& element,
                                          const std::vector<std::int64_t>& rows) const {
  const auto& file = state_->file;
  const MatrixInfo info = matrix_info(element);
  check_rows(path(), element, rows, info.rows);
  check_index_width(path(), element, info.cols);
  CsrMatrix<T> out;
  out.rows = static_cast<std::int64_t>(rows.size());
  out.cols = info.cols;
  out.indptr.assign(rows.size() + 1, 0);
  if (info.storage != MatrixStorage::csr) {
    // Dense and CSC storage: read the rows densely, then compress them.
    const auto dense = read_rows<T>(element, rows);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      for (std::int64_t j = 0; j < info.cols; ++j) {
        const T v = dense[i * static_cast<std::size_t>(info.cols) + static_cast<std::size_t>(j)];
        if (v != T(0)) {
          out.indices.push_back(static_cast<SparseIndex>(j));
          out.values.push_back(v);
        }
      }
      out.indptr[i + 1] = static_cast<std::int64_t>(out.values.size());
    }
    return out;
  }

  const std::string indptr_path = join(element, "indptr");
  const std::string indices_path = join(element, "indices");
  const std::string data_path = join(element, "data");
  const auto unique = sorted_unique(rows);

  // 1. Row pointers: neighbouring requested rows share one read of indptr.
  constexpr std::int64_t pointer_gap = 256;
  std::vector<std::pair<std::int64_t, std::int64_t>> pointer_runs;
  for (std::size_t i = 0; i < unique.size();) {
    std::size_t j = i;
    while (j + 1 < unique.size() && unique[j + 1] - unique[j] <= pointer_gap) ++j;
    pointer_runs.emplace_back(unique[i], unique[j] + 2);
    i = j + 1;
  }
  const auto pointers = file.read_ranges<std::int64_t>(indptr_path, pointer_runs);
  check_compressed(path(), element, pointers, info.nnz);
  std::vector<std::int64_t> begin(unique.size()), end(unique.size());
  {
    std::size_t u = 0, offset = 0;
    for (const auto& [first, last] : pointer_runs) {
      while (u < unique.size() && unique[u] < last - 1) {
        const std::size_t at = offset + static_cast<std::size_t>(unique[u] - first);
        begin[u] = pointers[at];
        end[u] = pointers[at + 1];
        ++u;
      }
      offset += static_cast<std::size_t>(last - first);
    }
  }

  // 2. Values: rows whose slices lie close together are read as one block.
  constexpr std::int64_t value_gap = 4096;
  std::vector<std::pair<std::int64_t, std::int64_t>> blocks;
  std::vector<std::size_t> block_of(unique.size());
  for (std::size_t u = 0; u < unique.size(); ++u) {
    if (end[u] == begin[u]) {
      block_of[u] = blocks.empty() ? 0 : blocks.size() - 1;
      continue;
    }
    if (!blocks.empty() && begin[u] >= blocks.back().first && begin[u] - blocks.back().second <= value_gap)
      blocks.back().second = std::max(blocks.back().second, end[u]);
    else
      blocks.emplace_back(begin[u], end[u]);
    block_of[u] = blocks.size() - 1;
  }
  // In 32 bits, as read_column_indices reads them: no widening of what scipy
  // wrote, and a stored 64-bit value that SparseIndex cannot hold is refused
  // by the conversion even in gap bytes (it can only be damage: cols fits).
  const auto block_indices = file.read_ranges<SparseIndex>(indices_path, blocks);
  const auto block_values = file.read_ranges<T>(data_path, blocks);
  std::vector<std::int64_t> block_offset(blocks.size() + 1, 0);
  for (std::size_t b = 0; b < blocks.size(); ++b)
    block_offset[b + 1] = block_offset[b] + (blocks[b].second - blocks[b].first);

  // 3. Assemble in the requested order (repeats copy the same slice).
  const auto positions = positions_in(unique, rows);
  std::int64_t total = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto u = positions[i];
    total += end[u] - begin[u];
    out.indptr[i + 1] = total;
  }
  out.indices.resize(static_cast<std::size_t>(total));
  out.values.resize(static_cast<std::size_t>(total));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto u = positions[i];
    const std::int64_t length = end[u] - begin[u];
    if (length == 0) continue;
    const std::size_t b = block_of[u];
    const auto from = static_cast<std::size_t>(block_offset[b] + (begin[u] - blocks[b].first));
    const auto to = static_cast<std::size_t>(out.indptr[i]);
    // Only the slices handed out are checked: gap bytes read along with them
    // belong to rows nobody asked for.
    for (std::int64_t k = 0; k < length; ++k) {
      const auto j = block_indices[from + static_cast<std::size_t>(k)];
      if (j < 0 || j >= info.cols)
        throw Error(path(), join(element, "indices"),
                    "index " + std::to_string(j) + " in row " + std::to_string(rows[i]) +
                        " lies outside [0, " + std::to_string(info.cols) + ") (damaged file?)");
    }
    std::copy_n(block_indices.begin() + static_cast<std::ptrdiff_t>(from), length,
                out.indices.begin() + static_cast<std::ptrdiff_t>(to));
    std::copy_n(block_values.begin() + static_cast<std::ptrdiff_t>(from), length,
                out.values.begin() + static_cast<std::ptrdiff_t>(to));
  }
  return out;
}

template <class T>
std::vector<T> AnnDataReader::read_rows(const std::string& element,
                                        const std::vector<std::int64_t>& rows) const {
  const auto& file = state_->file;
  const MatrixInfo info = matrix_info(element);
  check_rows(path(), element, rows, info.rows);
  const auto cols = static_cast<std::size_t>(info.cols);
  switch (info.storage) {
    case MatrixStorage::dense: return file.read_rows<T>(element, rows);
    case MatrixStorage::csr: {
      const auto sparse = read_csr_rows<T>(element, rows);
      std::vector<T> dense(rows.size() * cols, T(0));
      for (std::size_t i = 0; i < rows.size(); ++i)
        for (auto k = sparse.indptr[i]; k < sparse.indptr[i + 1]; ++k)
          dense[i * cols + static_cast<std::size_t>(sparse.indices[static_cast<std::size_t>(k)])] +=
              sparse.values[static_cast<std::size_t>(k)];
      return dense;
    }
    case MatrixStorage::csc: {
      // Rows of a CSC matrix are spread over every column: stream the columns
      // in blocks and keep the entries of the selected rows.
      const auto unique = sorted_unique(rows);
      std::vector<std::int32_t> slot(static_cast<std::size_t>(info.rows), -1);
      for (std::size_t u = 0; u < unique.size(); ++u) slot[static_cast<std::size_t>(unique[u])] = static_cast<std::int32_t>(u);
      std::vector<T> unique_dense(unique.size() * cols, T(0));
      stream_csc<T>(file, path(), element, info, [&](std::int64_t row, std::size_t column, T value) {
        const auto s = slot[static_cast<std::size_t>(row)];
        if (s >= 0) unique_dense[static_cast<std::size_t>(s) * cols + column] += value;
      });
      if (unique.size() == rows.size() && std::equal(unique.begin(), unique.end(), rows.begin()))
        return unique_dense;
      const auto positions = positions_in(unique, rows);
      std::vector<T> dense(rows.size() * cols);
      for (std::size_t i = 0; i < rows.size(); ++i)
        std::copy_n(unique_dense.begin() + static_cast<std::ptrdiff_t>(positions[i] * cols), cols,
                    dense.begin() + static_cast<std::ptrdiff_t>(i * cols));
      return dense;
    }
    case MatrixStorage::dataframe: break;
  }
  throw Error(path(), element, "is a dataframe, not a matrix");
}

template <class T>
std::vector<T> AnnDataReader::read_dense(const std::string& element) const {
  const MatrixInfo info = matrix_info(element);
  if (info.storage == MatrixStorage::dense) return state_->file.read<T>(element);
  std::vector<std::int64_t> all(static_cast<std::size_t>(info.rows));
  std::iota(all.begin(), all.end(), std::int64_t(0));
  return read_rows<T>(element, all);
}

template <class T>
CsrMatrix<T> AnnDataReader::read_csr(const std::string& element) const {
  const auto& file = state_->file;
  const MatrixInfo info = matrix_info(element);
  check_index_width(path(), element, info.cols);
  if (info.storage == MatrixStorage::csr) {
    CsrMatrix<T> out;
    out.rows = info.rows;
    out.cols = info.cols;
    out.indptr = file.read<std::int64_t>(join(element, "indptr"));
    check_compressed(path(), element, out.indptr, info.nnz);
    if (out.indptr.front() != 0 || out.indptr.back() != info.nnz)
      throw Error(path(), join(element, "indptr"), "does not span the stored values (damaged file?)");
    out.indices = read_column_indices(file, path(), element, info.cols);
    out.values = file.read<T>(join(element, "data"));
    return out;
  }
  // CSC: the columns streamed into compressed rows (read_csr_row_range).
  if (info.storage == MatrixStorage::csc) return read_csr_row_range<T>(element, 0, info.rows);
  std::vector<std::int64_t> all(static_cast<std::size_t>(info.rows));
  std::iota(all.begin(), all.end(), std::int64_t(0));
  return read_csr_rows<T>(element, all);
}

template <class T>
CsrMatrix<T> AnnDataReader::read_csr_row_range(const std::string& element, std::int64_t begin,
                                               std::int64_t end) const {
  const auto& file = state_->file;
  const MatrixInfo info = matrix_info(element);
  check_index_width(path(), element, info.cols);
  if (!(begin >= 0 && begin <= end && end <= info.rows))
    throw Error(path(), element,
                "rows " + std::to_string(begin) + ".." + std::to_string(end) + " lie outside its " +
                    std::to_string(info.rows) + " rows");
  CsrMatrix<T> out;
  out.rows = end - begin;
  out.cols = info.cols;
  if (info.storage == MatrixStorage::csr) {
    out.indptr = file.read_range<std::int64_t>(join(element, "indptr"), begin, end + 1);
    check_compressed(path(), element, out.indptr, info.nnz);
    const std::int64_t first = out.indptr.front(), last = out.indptr.back();
    for (auto& p : out.indptr) p -= first;
    out.indices = file.read_range<SparseIndex>(join(element, "indices"), first, last);
    const auto range = detail::index_range(out.indices.data(), out.indices.size());
    if (!out.indices.empty() && (range.low < 0 || range.high >= info.cols))
      check_indices(path(), element, out.indices, info.cols);
    out.values = file.read_range<T>(join(element, "data"), first, last);
    return out;
  }
  if (info.storage == MatrixStorage::csc) {
    // Stream the compressed columns in blocks, keep the range's entries, then
    // a counting sort by row (columns stay ascending within each row).
    std::vector<std::int64_t> kept_row;
    std::vector<SparseIndex> kept_column;
    std::vector<T> kept_value;
    stream_csc<T>(file, path(), element, info, [&](std::int64_t row, std::size_t column, T value) {
      if (row < begin || row >= end) return;
      kept_row.push_back(row - begin);
      kept_column.push_back(static_cast<SparseIndex>(column));
      kept_value.push_back(value);
    });
    out.indptr.assign(static_cast<std::size_t>(out.rows) + 1, 0);
    for (const auto r : kept_row) ++out.indptr[static_cast<std::size_t>(r) + 1];
    for (std::size_t r = 0; r < static_cast<std::size_t>(out.rows); ++r) out.indptr[r + 1] += out.indptr[r];
    out.indices.resize(kept_row.size());
    out.values.resize(kept_row.size());
    std::vector<std::int64_t> next(out.indptr.begin(), out.indptr.end() - 1);
    for (std::size_t e = 0; e < kept_row.size(); ++e) {
      const auto at = static_cast<std::size_t>(next[static_cast<std::size_t>(kept_row[e])]++);
      out.indices[at] = kept_column[e];
      out.values[at] = kept_value[e];
    }
    return out;
  }
  std::vector<std::int64_t> rows(static_cast<std::size_t>(end - begin));
  std::iota(rows.begin(), rows.end(), begin);
  return read_csr_rows<T>(element, rows);
}

// ------------------------------------------------------------------- uns

double AnnDataReader::uns_number(const std::string& key) const {
  const std::string element = join("uns", key);
  const auto& file = state_->file;
  if (!file.is_dataset(element)) throw Error(path(), element, "no such uns entry");
  const auto type = file.type(element);
  if (!(type.is_integer || type.is_float || type.is_bool) || file.size(element) != 1)
    throw Error(path(), element, "is not a numeric scalar");
  return file.read<double>(element)[0];
}

std::string AnnDataReader::uns_string(const std::string& key) const {
  const std::string element = join("uns", key);
  if (!state_->file.is_dataset(element)) throw Error(path(), element, "no such uns entry");
  return state_->file.read_string(element);
}

std::vector<double> AnnDataReader::uns_array(const std::string& key,
                                             std::vector<std::int64_t>* shape) const {
  const std::string element = join("uns", key);
  if (!state_->file.is_dataset(element)) throw Error(path(), element, "no such uns entry");
  if (shape) *shape = state_->file.shape(element);
  return state_->file.read<double>(element);
}

#define KOTML_ANNDATA_INSTANTIATE(T)                                                               \
  template std::vector<T> AnnDataReader::read_rows<T>(const std::string&,                          \
                                                      const std::vector<std::int64_t>&) const;     \
  template std::vector<T> AnnDataReader::read_dense<T>(const std::string&) const;                  \
  template CsrMatrix<T> AnnDataReader::read_csr<T>(const std::string&) const;                      \
  template CsrMatrix<T> AnnDataReader::read_csr_rows<T>(const std::string&,                        \
                                                        const std::vector<std::int64_t>&) const;    \
  template CsrMatrix<T> AnnDataReader::read_csr_row_range<T>(const std::string&, std::int64_t,       \
                                                             std::int64_t) const;

KOTML_ANNDATA_INSTANTIATE(float)
KOTML_ANNDATA_INSTANTIATE(double)
KOTML_ANNDATA_INSTANTIATE(std::int32_t)
KOTML_ANNDATA_INSTANTIATE(std::int64_t)
#undef KOTML_ANNDATA_INSTANTIATE

// =============================================================== writing

namespace {

void set_encoding(h5::File& file, const std::string& element, const std::string& type,
                  const std::string& version) {
  file.write_string_attribute(element, "encoding-type", type);
  file.write_string_attribute(element, "encoding-version", version);
}

void make_dict(h5::File& file, const std::string& group) {
  file.create_group(group);
  set_encoding(file, group, "dict", "0.1.0");
}

/// Creates the dict groups above a nested uns/obsm name ("params/k").
void make_parent_dicts(h5::File& file, const std::string& element) {
  std::string prefix;
  std::size_t start = 0;
  for (std::size_t slash = element.find('/'); slash != std::string::npos;
       slash = element.find('/', start)) {
    prefix = element.substr(0, slash);
    if (!file.exists(prefix)) make_dict(file, prefix);
    start = slash + 1;
  }
}

void check_name(const std::string& path, const std::string& where, const std::string& name,
                bool allow_nested) {
  if (name.empty()) throw Error(path, where, "empty name");
  if (!allow_nested && name.find('/') != std::string::npos)
    throw Error(path, where + "/" + name, "names must not contain '/'");
  if (name.front() == '/' || name.back() == '/' || name.find("//") != std::string::npos)
    throw Error(path, where + "/" + name, "malformed name");
}

void check_csr(const std::string& path, const std::string& element, const CsrMatrix<float>& m,
               std::int64_t rows, std::int64_t cols) {
  if (m.rows != rows || m.cols != cols)
    throw Error(path, element, "CSR shape " + std::to_string(m.rows) + "x" + std::to_string(m.cols) +
                                   " differs from " + std::to_string(rows) + "x" + std::to_string(cols));
  if (m.indptr.size() != static_cast<std::size_t>(rows) + 1 || m.indptr.front() != 0 ||
      m.indptr.back() != static_cast<std::int64_t>(m.values.size()) ||
      m.indices.size() != m.values.size())
    throw Error(path, element, "CSR arrays are inconsistent (indptr must run from 0 to nnz; "
                               "indices and values must have nnz entries)");
  for (std::size_t i = 0; i + 1 < m.indptr.size(); ++i)
    if (m.indptr[i + 1] < m.indptr[i]) throw Error(path, element, "CSR indptr decreases");
  for (auto j : m.indices)
    if (j < 0 || j >= cols)
      throw Error(path, element, "CSR column index " + std::to_string(j) + " outside [0, " +
                                     std::to_string(cols) + ")");
}

void check_column(const std::string& path, const std::string& frame, const Column& c,
                  std::int64_t length) {
  const std::string element = frame + "/" + c.name;
  if (c.name == "_index") throw Error(path, element, "'_index' is reserved for the index");
  if (c.size() != length)
    throw Error(path, element, "has " + std::to_string(c.size()) + " values, the frame has " +
                                   std::to_string(length) + " rows");
  if (!c.missing.empty() && static_cast<std::int64_t>(c.missing.size()) != length)
    throw Error(path, element, "missing-mask length differs from the column's");
  if (c.kind == ColumnKind::categorical) {
    std::set<std::string> seen;
    for (const auto& category : c.categories)
      if (!seen.insert(category).second)
        throw Error(path, element, "category '" + category + "' appears twice");
    for (auto code : c.codes)
      if (code < -1 || code >= static_cast<std::int32_t>(c.categories.size()))
        throw Error(path, element, "category code " + std::to_string(code) + " outside [-1, " +
                                       std::to_string(c.categories.size()) + ")");
  }
  if (c.kind == ColumnKind::numeric && is_integer_dtype(c.dtype))
    for (auto v : c.numbers)
      if (v != std::floor(v) || !std::isfinite(v))
        throw Error(path, element, "value " + float_text(v) + " cannot be stored as " + c.dtype);
}

void check_array(const std::string& path, const std::string& element, std::size_t count,
                 const std::vector<std::int64_t>& shape, std::int64_t first_dim) {
  std::int64_t product = 1;
  for (auto d : shape) {
    if (d < 0) throw Error(path, element, "negative dimension");
    product *= d;
  }
  if (static_cast<std::int64_t>(count) != product)
    throw Error(path, element, std::to_string(count) + " values do not fill the shape");
  if (first_dim >= 0 && (shape.empty() || shape[0] != first_dim))
    throw Error(path, element, "first dimension must be " + std::to_string(first_dim));
}

void write_numbers_as(h5::File& file, const std::string& element, const std::vector<double>& v,
                      const std::string& dtype) {
  const std::vector<std::int64_t> shape{static_cast<std::int64_t>(v.size())};
  auto as = [&](auto tag) {
    using T = decltype(tag);
    file.write(element, std::vector<T>(v.begin(), v.end()), shape);
  };
  if (dtype == "float32") as(float{});
  else if (dtype == "int8") as(std::int8_t{});
  else if (dtype == "int16") as(std::int16_t{});
  else if (dtype == "int32") as(std::int32_t{});
  else if (dtype == "int64") as(std::int64_t{});
  else if (dtype == "uint8") as(std::uint8_t{});
  else if (dtype == "uint16") as(std::uint16_t{});
  else if (dtype == "uint32") as(std::uint32_t{});
  else if (dtype == "uint64") as(std::uint64_t{});
  else file.write(element, v, shape);
}

std::vector<std::uint8_t> mask_of(const Column& c) {
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(c.size()), 0);
  for (std::size_t i = 0; i < c.missing.size(); ++i) mask[i] = c.missing[i] != 0;
  return mask;
}

void write_column(h5::File& file, const std::string& frame, const Column& c) {
  const std::string element = frame + "/" + c.name;
  const auto n = static_cast<std::int64_t>(c.size());
  switch (c.kind) {
    case ColumnKind::categorical: {
      file.create_group(element);
      set_encoding(file, element, "categorical", "0.2.0");
      file.write_bool_attribute(element, "ordered", c.ordered);
      // pandas keeps codes in the narrowest signed type that holds every category.
      const auto k = c.categories.size();
      std::vector<double> codes(c.codes.begin(), c.codes.end());
      for (std::size_t i = 0; i < c.missing.size(); ++i)
        if (c.missing[i]) codes[i] = -1;
      write_numbers_as(file, element + "/codes", codes, k < 128 ? "int8" : k < 32768 ? "int16" : "int32");
      set_encoding(file, element + "/codes", "array", "0.2.0");
      file.write_strings(element + "/categories", c.categories);
      set_encoding(file, element + "/categories", "string-array", "0.2.0");
      break;
    }
    case ColumnKind::string:
      file.write_strings(element, c.strings);
      set_encoding(file, element, "string-array", "0.2.0");
      break;
    case ColumnKind::numeric:
      write_numbers_as(file, element, c.numbers, c.dtype);
      set_encoding(file, element, "array", "0.2.0");
      break;
    case ColumnKind::boolean: {
      std::vector<std::uint8_t> values(c.numbers.size());
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = c.numbers[i] != 0;
      file.write_bools(element, values, {n});
      set_encoding(file, element, "array", "0.2.0");
      break;
    }
    case ColumnKind::nullable_integer:
    case ColumnKind::nullable_boolean:
    case ColumnKind::nullable_string: {
      file.create_group(element);
      const auto mask = mask_of(c);
      if (c.kind == ColumnKind::nullable_string) {
        set_encoding(file, element, "nullable-string-array", "0.1.0");
        std::vector<std::string> values(c.strings);
        for (std::size_t i = 0; i < values.size(); ++i)
          if (mask[i]) values[i].clear();
        file.write_strings(element + "/values", values);
        set_encoding(file, element + "/values", "string-array", "0.2.0");
      } else if (c.kind == ColumnKind::nullable_integer) {
        set_encoding(file, element, "nullable-integer", "0.1.0");
        std::vector<double> values(c.numbers);
        for (std::size_t i = 0; i < values.size(); ++i)
          if (mask[i]) values[i] = 0;
        write_numbers_as(file, element + "/values", values, is_integer_dtype(c.dtype) ? c.dtype : "int64");
        set_encoding(file, element + "/values", "array", "0.2.0");
      } else {
        set_encoding(file, element, "nullable-boolean", "0.1.0");
        std::vector<std::uint8_t> values(c.numbers.size());
        for (std::size_t i = 0; i < values.size(); ++i) values[i] = !mask[i] && c.numbers[i] != 0;
        file.write_bools(element + "/values", values, {n});
        set_encoding(file, element + "/values", "array", "0.2.0");
      }
      file.write_bools(element + "/mask", mask, {n});
      set_encoding(file, element + "/mask", "array", "0.2.0");
      break;
    }
  }
}

std::vector<std::string> default_names(std::int64_t n) {
  std::vector<std::string> names(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) names[static_cast<std::size_t>(i)] = std::to_string(i);
  return names;
}

void write_frame(h5::File& file, const std::string& frame, const std::vector<std::string>& index,
                 const std::vector<Column>& columns) {
  file.create_group(frame);
  set_encoding(file, frame, "dataframe", "0.2.0");
  file.write_string_attribute(frame, "_index", "_index");
  std::vector<std::string> order;
  for (const auto& c : columns) order.push_back(c.name);
  file.write_string_array_attribute(frame, "column-order", order);
  file.write_strings(frame + "/_index", index);
  set_encoding(file, frame + "/_index", "string-array", "0.2.0");
  for (const auto& c : columns) write_column(file, frame, c);
}

/// A CSR group's encoding, shape and data; the caller adds indices and indptr.
void write_csr_values(h5::File& file, const std::string& element, const std::vector<float>& values,
                      std::int64_t rows, std::int64_t cols, int compression_level) {
  file.create_group(element);
  set_encoding(file, element, "csr_matrix", "0.1.0");
  file.write_numeric_attribute<std::int64_t>(element, "shape", {rows, cols});
  file.write(element + "/data", values, {static_cast<std::int64_t>(values.size())}, compression_level);
}

void write_csr_group(h5::File& file, const std::string& element, const CsrMatrix<float>& m,
                     int compression_level) {
  write_csr_values(file, element, m.values, m.rows, m.cols, compression_level);
  const std::vector<std::int64_t> nnz_shape{static_cast<std::int64_t>(m.values.size())};
  // scipy's choice: 32-bit indices whenever they fit.
  constexpr auto int32_max = static_cast<std::int64_t>(std::numeric_limits<std::int32_t>::max());
  if (m.cols <= int32_max && static_cast<std::int64_t>(m.values.size()) <= int32_max) {
    file.write(element + "/indices", m.indices, nnz_shape, compression_level);
    file.write(element + "/indptr", std::vector<std::int32_t>(m.indptr.begin(), m.indptr.end()),
               {static_cast<std::int64_t>(m.indptr.size())});
  } else {
    // One width for both, as scipy writes them.
    file.write(element + "/indices", std::vector<std::int64_t>(m.indices.begin(), m.indices.end()),
               nnz_shape, compression_level);
    file.write(element + "/indptr", m.indptr, {static_cast<std::int64_t>(m.indptr.size())});
  }
}

void write_array_entries(
    h5::File& file, const std::string& group,
    const std::vector<std::pair<std::string, std::pair<std::vector<double>, std::vector<std::int64_t>>>>& entries,
    int compression_level) {
  for (const auto& [name, array] : entries) {
    const std::string element = group + "/" + name;
    make_parent_dicts(file, element);
    file.write(element, array.first, array.second, array.second.empty() ? 0 : compression_level);
    set_encoding(file, element, "array", "0.2.0");
  }
}

}  // namespace

void write_anndata(const std::string& path, const AnnDataContent& c) {
  // Everything is checked before the first byte is written.
  if (c.n_obs < 0 || c.n_vars < 0) throw Error(path, "X", "negative shape");
  if (c.x_is_sparse)
    check_csr(path, "X", c.x_csr, c.n_obs, c.n_vars);
  else if (static_cast<std::int64_t>(c.x_dense.size()) != c.n_obs * c.n_vars)
    throw Error(path, "X", std::to_string(c.x_dense.size()) + " values do not fill " +
                               std::to_string(c.n_obs) + "x" + std::to_string(c.n_vars));
  if (!c.obs_names.empty() && static_cast<std::int64_t>(c.obs_names.size()) != c.n_obs)
    throw Error(path, "obs/_index", "needs " + std::to_string(c.n_obs) + " names");
  if (!c.var_names.empty() && static_cast<std::int64_t>(c.var_names.size()) != c.n_vars)
    throw Error(path, "var/_index", "needs " + std::to_string(c.n_vars) + " names");
  for (const auto& [frame, columns, length] :
       {std::tuple<std::string, const std::vector<Column>*, std::int64_t>{"obs", &c.obs_columns, c.n_obs},
        {"var", &c.var_columns, c.n_vars}}) {
    std::set<std::string> names;
    for (const auto& column : *columns) {
      check_name(path, frame, column.name, false);
      if (!names.insert(column.name).second)
        throw Error(path, frame + "/" + column.name, "column name appears twice");
      check_column(path, frame, column, length);
    }
  }
  for (const auto& [name, array] : c.obsm) {
    check_name(path, "obsm", name, false);
    check_array(path, "obsm/" + name, array.first.size(), array.second, c.n_obs);
  }
  for (const auto& [name, array] : c.varm) {
    check_name(path, "varm", name, false);
    check_array(path, "varm/" + name, array.first.size(), array.second, c.n_vars);
  }
  std::set<std::string> uns_names;
  auto check_uns = [&](const std::string& name) {
    check_name(path, "uns", name, true);
    if (!uns_names.insert(name).second) throw Error(path, "uns/" + name, "name appears twice");
  };
  for (const auto& [name, array] : c.uns_arrays) {
    check_uns(name);
    check_array(path, "uns/" + name, array.first.size(), array.second, -1);
  }
  for (const auto& entry : c.uns_scalars) check_uns(entry.first);
  for (const auto& entry : c.uns_strings) check_uns(entry.first);
  for (const auto& [name, layer] : c.layers) {
    check_name(path, "layers", name, false);
    check_csr(path, "layers/" + name, layer, c.n_obs, c.n_vars);
  }
  {
    std::set<std::string> written;
    for (const auto& [name, array] : c.obsm) written.insert("obsm/" + name);
    for (const auto& [name, array] : c.varm) written.insert("varm/" + name);
    for (const auto& [name, layer] : c.layers) written.insert("layers/" + name);
    for (const auto& [name, values] : c.layers_with_x_pattern) {
      check_name(path, "layers", name, false);
      if (!c.x_is_sparse) throw InternalError("a layer with X's pattern needs a sparse X");
      if (values.size() != c.x_csr.values.size())
        throw Error(path, "layers/" + name,
                    std::to_string(values.size()) + " values for X's " + std::to_string(c.x_csr.values.size()));
      if (!written.insert("layers/" + name).second) throw Error(path, "layers/" + name, "name appears twice");
    }
    for (const auto& element : c.copied) {
      const auto slash = element.find('/');
      const std::string group = element.substr(0, slash);
      if (slash == std::string::npos || (group != "layers" && group != "obsm" && group != "varm"))
        throw InternalError("write_anndata copies only layers, obsm and varm entries, not " + element);
      check_name(path, group, element.substr(slash + 1), false);
      if (!written.insert(element).second) throw Error(path, element, "written and copied both");
    }
  }

  AtomicFile output(path);
  {
    h5::File file = h5::File::create(output);
    file.write_string_attribute("/", "encoding-type", "anndata");
    file.write_string_attribute("/", "encoding-version", "0.1.0");
    if (c.x_is_sparse) {
      write_csr_group(file, "X", c.x_csr, c.compression_level);
    } else {
      file.write("X", c.x_dense, {c.n_obs, c.n_vars}, c.compression_level);
      set_encoding(file, "X", "array", "0.2.0");
    }
    write_frame(file, "obs", c.obs_names.empty() ? default_names(c.n_obs) : c.obs_names, c.obs_columns);
    write_frame(file, "var", c.var_names.empty() ? default_names(c.n_vars) : c.var_names, c.var_columns);
    for (const char* group : {"obsm", "varm", "obsp", "varp", "layers", "uns"}) make_dict(file, group);
    write_array_entries(file, "obsm", c.obsm, c.compression_level);
    write_array_entries(file, "varm", c.varm, c.compression_level);
    write_array_entries(file, "uns", c.uns_arrays, 0);
    for (const auto& [name, value] : c.uns_scalars) {
      const std::string element = "uns/" + name;
      make_parent_dicts(file, element);
      file.write(element, std::vector<double>{value}, {});
      set_encoding(file, element, "numeric-scalar", "0.2.0");
    }
    for (const auto& [name, value] : c.uns_strings) {
      const std::string element = "uns/" + name;
      make_parent_dicts(file, element);
      file.write_string(element, value);
      set_encoding(file, element, "string", "0.2.0");
    }
    for (const auto& [name, layer] : c.layers)
      write_csr_group(file, "layers/" + name, layer, c.compression_level);
    for (const auto& [name, values] : c.layers_with_x_pattern) {
      const std::string element = "layers/" + name;
      write_csr_values(file, element, values, c.n_obs, c.n_vars, c.compression_level);
      file.hard_link("X/indices", element + "/indices");
      file.hard_link("X/indptr", element + "/indptr");
    }
    if (!c.copied.empty()) {
      const h5::File source = h5::File::open_read(c.copy_source);
      for (const auto& element : c.copied) file.copy_from(source, element);
    }
    file.close();
  }
  output.commit();
}

}  // namespace kotml::io

namespace kotml::io {

void copy_with_obs_columns(const std::string& source, const std::string& target,
                           const std::vector<Column>& columns) {
  const AnnDataReader reader(source);
  const std::int64_t n_obs = reader.n_obs();
  for (const auto& c : columns) check_column(target, "obs", c, n_obs);
  std::vector<std::string> order = reader.obs_columns();
  AtomicFile output(target);
  std::error_code ec;
  std::filesystem::copy_file(source, output.temporary_path(), std::filesystem::copy_options::overwrite_existing,
                             ec);
  if (ec) throw Error(target, "", "cannot copy " + source + ": " + ec.message());
  {
    h5::File file = h5::File::open_rw(output.temporary_path());
    for (const auto& c : columns) {
      file.remove("obs/" + c.name);
      if (std::find(order.begin(), order.end(), c.name) == order.end()) order.push_back(c.name);
      write_column(file, "obs", c);
    }
    file.write_string_array_attribute("obs", "column-order", order);
    file.close();
  }
  output.commit();
}

}  // namespace kotml::io
