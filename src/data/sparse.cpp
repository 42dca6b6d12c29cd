// Structural operations on host CSR matrices. They move data rather than compute
// on it; each is one linear pass.

#include "kotml/data/sparse.hpp"

#include <limits>
#include <string>

#include "kotml/core/error.hpp"
#include "staging.hpp"

namespace kotml::data {

DeviceCsr to_device(const HostCsr& csr) {
  DeviceCsr d;
  d.rows = csr.rows;
  d.cols = csr.cols;
  d.indptr = detail::stage(csr.indptr);
  d.indices = detail::stage(csr.indices);
  d.values = detail::stage(csr.values);
  return d;
}

HostCsr transpose(const HostCsr& csr) {
  // The transpose numbers the input's rows in its 32-bit column indices.
  constexpr std::int64_t most = std::int64_t(std::numeric_limits<io::SparseIndex>::max()) + 1;
  if (csr.rows > most)
    throw Error("", "", "a sparse matrix of " + std::to_string(csr.rows) +
                " cells cannot be transposed: kotml numbers sparse columns in 32 bits (at most " +
                std::to_string(most) + ")");
  HostCsr t;
  t.rows = csr.cols;
  t.cols = csr.rows;
  t.indptr.assign(static_cast<std::size_t>(csr.cols + 1), 0);
  for (const auto j : csr.indices) ++t.indptr[j + 1];
  for (std::int64_t j = 0; j < csr.cols; ++j) t.indptr[j + 1] += t.indptr[j];
  t.indices.resize(csr.indices.size());
  t.values.resize(csr.values.size());
  std::vector<std::int64_t> next(t.indptr.begin(), t.indptr.end() - 1);
  for (std::int64_t i = 0; i < csr.rows; ++i) {
    for (std::int64_t p = csr.indptr[i]; p < csr.indptr[i + 1]; ++p) {
      const auto q = next[csr.indices[p]]++;
      t.indices[q] = static_cast<io::SparseIndex>(i);
      t.values[q] = csr.values[p];
    }
  }
  return t;
}

HostCsr select_columns(const HostCsr& csr, const std::vector<std::int64_t>& columns) {
  return select_columns(csr, columns, 0, csr.rows);
}

HostCsr select_columns(const HostCsr& csr, const std::vector<std::int64_t>& columns, std::int64_t row_begin,
                       std::int64_t row_end) {
  std::vector<std::int64_t> position(static_cast<std::size_t>(csr.cols), -1);
  for (std::size_t k = 0; k < columns.size(); ++k) position[columns[k]] = static_cast<std::int64_t>(k);
  HostCsr out;
  out.rows = row_end - row_begin;
  out.cols = static_cast<std::int64_t>(columns.size());
  out.indptr.assign(static_cast<std::size_t>(out.rows + 1), 0);
  for (std::int64_t i = row_begin; i < row_end; ++i) {
    for (std::int64_t p = csr.indptr[i]; p < csr.indptr[i + 1]; ++p) {
      const auto k = position[csr.indices[p]];
      if (k < 0) continue;
      out.indices.push_back(static_cast<io::SparseIndex>(k));
      out.values.push_back(csr.values[p]);
    }
    out.indptr[i - row_begin + 1] = static_cast<std::int64_t>(out.indices.size());
  }
  return out;
}

}  // namespace kotml::data
