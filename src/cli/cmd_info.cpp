// kotml info FILE.h5ad: what an AnnData file holds, as a fixed-layout table, so
// a user can pick the donor column, the label column and the matrix to use.

#include <algorithm>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "kotml/core/error.hpp"
#include "kotml/core/log.hpp"
#include "kotml/io/anndata.hpp"
#include "info.hpp"
#include "subcommand.hpp"

namespace kotml::cli {
namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  if (shape.empty()) return "scalar";
  std::string text;
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? " x " : "") + std::to_string(shape[i]);
  return text;
}

std::string matrix_text(const io::MatrixInfo& m) {
  std::ostringstream s;
  switch (m.storage) {
    case io::MatrixStorage::dense:
      s << "dense " << m.dtype << ", " << m.rows << " x " << m.cols;
      break;
    case io::MatrixStorage::csr:
    case io::MatrixStorage::csc:
      s << (m.storage == io::MatrixStorage::csr ? "CSR " : "CSC ") << m.dtype << ", " << m.rows
        << " x " << m.cols << ", " << m.nnz << " non-zeros (" << m.index_dtype << " indices)";
      break;
    case io::MatrixStorage::dataframe:
      s << "dataframe, " << m.rows << " rows x " << m.cols << " columns";
      break;
  }
  return s.str();
}

/// One line per entry of a mapping group (layers, obsm, varm, obsp, varp):
/// matrices with storage and shape, anything else with its encoding.
void print_mapping(std::ostream& out, const io::AnnDataReader& reader, const std::string& group,
                   const std::vector<std::string>& keys) {
  out << std::left << std::setw(10) << group;
  if (keys.empty()) {
    out << "(none)\n";
    return;
  }
  out << keys.size() << (keys.size() == 1 ? " entry\n" : " entries\n");
  for (const auto& key : keys) {
    const std::string element = group + "/" + key;
    const auto summary = reader.describe(element);
    std::string text;
    if (summary.encoding == "array" || summary.encoding == "csr_matrix" ||
        summary.encoding == "csc_matrix" || summary.encoding == "dataframe" ||
        summary.encoding.find("(legacy)") != std::string::npos) {
      if (summary.shape.size() == 2 || summary.encoding != "array")
        text = matrix_text(reader.matrix_info(element));
      else
        text = "array " + summary.dtype + ", " + shape_text(summary.shape);
    } else {
      text = summary.encoding + " (not read by kotml)";
    }
    out << "  " << std::setw(24) << key << " " << text << "\n";
  }
}

void print_uns(std::ostream& out, const io::AnnDataReader& reader) {
  const auto keys = reader.uns_keys();
  out << std::left << std::setw(10) << "uns";
  if (keys.empty()) {
    out << "(none)\n";
    return;
  }
  out << keys.size() << (keys.size() == 1 ? " entry\n" : " entries\n");
  for (const auto& key : keys) {
    const auto summary = reader.describe("uns/" + key);
    std::string text = summary.encoding;
    if (summary.encoding == "dict")
      text += ", " + std::to_string(reader.file().children("uns/" + key).size()) + " keys";
    else if (!summary.dtype.empty())
      text += " " + summary.dtype + (summary.shape.empty() ? "" : ", " + shape_text(summary.shape));
    out << "  " << std::setw(24) << key << " " << text << "\n";
  }
}

void print_frame(std::ostream& out, const io::AnnDataReader& reader, const std::string& frame,
                 std::int64_t length) {
  const auto columns = frame == "obs" ? reader.obs_columns() : reader.var_columns();
  out << std::left << std::setw(10) << frame << "index of " << length << " names, "
      << columns.size() << (columns.size() == 1 ? " column\n" : " columns\n");
  if (columns.empty()) return;
  std::size_t width = 6;
  for (const auto& c : columns) width = std::max(width, c.size());
  out << "  " << std::setw(static_cast<int>(width)) << "column" << "  " << std::setw(17) << "kind"
      << std::setw(9) << "dtype" << std::setw(12) << "categories" << "missing\n";
  for (const auto& name : columns) {
    const io::Column c = frame == "obs" ? reader.obs(name) : reader.var(name);
    const auto missing = std::count_if(c.missing.begin(), c.missing.end(), [](auto m) { return m != 0; });
    out << "  " << std::setw(static_cast<int>(width)) << name << "  " << std::setw(17)
        << to_string(c.kind) << std::setw(9) << c.dtype << std::setw(12)
        << (c.kind == io::ColumnKind::categorical ? std::to_string(c.categories.size()) : "-")
        << missing << "\n";
  }
}

/// Value counts of one obs column: what a user checks before naming it as the
/// donor or label column.
void print_column(std::ostream& out, const io::AnnDataReader& reader, const std::string& name) {
  const io::Column c = reader.obs(name);
  const auto labels = c.as_strings();
  std::int64_t missing = 0;
  for (std::int64_t i = 0; i < c.size(); ++i) missing += c.is_missing(i) ? 1 : 0;
  out << "\nobs column '" << name << "': " << to_string(c.kind) << " " << c.dtype << ", "
      << c.size() << " rows, " << missing << " missing\n";
  if (c.kind == io::ColumnKind::numeric || c.kind == io::ColumnKind::nullable_integer) {
    double lo = 0, hi = 0, sum = 0;
    std::int64_t n = 0;
    for (std::int64_t i = 0; i < c.size(); ++i) {
      if (c.is_missing(i)) continue;
      const double v = c.numbers[static_cast<std::size_t>(i)];
      lo = n == 0 ? v : std::min(lo, v);
      hi = n == 0 ? v : std::max(hi, v);
      sum += v;
      ++n;
    }
    if (n > 0)
      out << "  min " << lo << ", max " << hi << ", mean " << sum / static_cast<double>(n) << "\n";
    // Integer codes (cluster ids, patient numbers) with few values are listed
    // like categories: they may well be the donor or label column.
    const bool integral = c.kind == io::ColumnKind::nullable_integer || c.dtype.find("int") != std::string::npos;
    if (!integral) return;
    std::map<double, std::int64_t> by_value;
    for (std::int64_t i = 0; i < c.size(); ++i)
      if (!c.is_missing(i)) ++by_value[c.numbers[static_cast<std::size_t>(i)]];
    if (by_value.size() > 50) return;
    out << "  " << by_value.size() << " distinct values\n";
    for (const auto& [value, count] : by_value)
      out << "  " << std::setw(24) << io::integer_text(value) << " " << count << "\n";
    return;
  }
  // Categories in their stored order (unused ones too); other kinds by first
  // appearance. At most 40 lines.
  std::vector<std::string> values;
  if (c.kind == io::ColumnKind::categorical) values = c.categories;
  std::map<std::string, std::int64_t> counts;
  for (std::int64_t i = 0; i < c.size(); ++i) {
    if (c.is_missing(i)) continue;
    const auto& v = labels[static_cast<std::size_t>(i)];
    if (counts[v]++ == 0 && c.kind != io::ColumnKind::categorical) values.push_back(v);
  }
  out << "  " << values.size() << " distinct values\n";
  const std::size_t shown = std::min<std::size_t>(values.size(), 40);
  for (std::size_t k = 0; k < shown; ++k)
    out << "  " << std::setw(24) << values[k] << " " << counts[values[k]] << "\n";
  if (shown < values.size()) out << "  ... " << values.size() - shown << " more\n";
}

}  // namespace

void print_info(std::ostream& out, const io::AnnDataReader& reader, const std::vector<std::string>& columns) {
  out << std::left << std::setw(10) << "file" << reader.path() << "\n";
  out << std::setw(10) << "encoding"
      << (reader.encoding_version().empty() ? "anndata 0.7 (no root encoding)"
                                            : "anndata " + reader.encoding_version())
      << "\n";
  out << std::setw(10) << "shape" << reader.n_obs() << " obs x " << reader.n_vars() << " vars\n";
  out << std::setw(10) << "X" << (reader.has_x() ? matrix_text(reader.matrix_info("X")) : "(none)")
      << "\n";
  out << std::setw(10) << "raw";
  if (reader.has_raw()) {
    const std::string element = reader.has("raw/X") ? "raw/X" : "raw.X";
    out << matrix_text(reader.matrix_info(element)) << "; var index of " << reader.raw_n_vars()
        << " names\n";
  } else {
    out << "(none)\n";
  }
  print_mapping(out, reader, "layers", reader.layers());
  print_mapping(out, reader, "obsm", reader.obsm_keys());
  print_mapping(out, reader, "varm", reader.varm_keys());
  print_mapping(out, reader, "obsp", reader.obsp_keys());
  print_mapping(out, reader, "varp", reader.varp_keys());
  print_uns(out, reader);
  print_frame(out, reader, "obs", reader.n_obs());
  print_frame(out, reader, "var", reader.n_vars());
  for (const auto& name : columns) print_column(out, reader, name);
}

Subcommand info_subcommand() {
  Subcommand sub;
  sub.name = "info";
  sub.summary = "describe an AnnData (.h5ad) file: shape, X storage, layers, obsm, uns, columns";
  sub.usage = "kotml info FILE.h5ad [--column NAME]...";
  sub.example = "kotml info cohort.h5ad --column donor";
  sub.declare = [](OptionGroups& groups, po::positional_options_description& positional) {
    groups.input.add_options()
        ("file", po::value<std::string>()->required(), "the .h5ad file to describe")
        ("column", po::value<std::vector<std::string>>()->composing(),
         "also list the values of this obs column with their counts (repeatable)");
    positional.add("file", 1);
  };
  sub.run = [](const po::variables_map& vm, const dist::Comm& comm) {
    const std::string path = vm["file"].as<std::string>();
    const auto columns =
        vm.count("column") ? vm["column"].as<std::vector<std::string>>() : std::vector<std::string>{};
    // Only rank 0 reads and prints; the phase makes its failure every rank's.
    comm.phase([&] {
      if (!comm.is_root()) return;
      std::ostringstream text;
      print_info(text, io::AnnDataReader(path), columns);
      log::out() << text.str() << std::flush;
    });
    return exit_ok;
  };
  return sub;
}

}  // namespace kotml::cli
