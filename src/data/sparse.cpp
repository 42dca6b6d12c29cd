// Structural operations on host CSR matrices. They move data rather than compute
// on it; each is one linear pass.

#include "kotml/data/sparse.hpp"

#include <string>

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
      t.indices[q] = i;
      t.values[q] = csr.values[p];
    }
  }
  return t;
}

HostCsr select_columns(const HostCsr& csr, const std::vector<std::int64_t>& columns) {
  std::vector<std::int64_t> position(static_cast<std::size_t>(csr.cols), -1);
  for (std::size_t k = 0; k < columns.size(); ++k) position[columns[k]] = static_cast<std::int64_t>(k);
  HostCsr out;
  out.rows = csr.rows;
  out.cols = static_cast<std::int64_t>(columns.size());
  out.indptr.assign(static_cast<std::size_t>(csr.rows + 1), 0);
  for (std::int64_t i = 0; i < csr.rows; ++i) {
    for (std::int64_t p = csr.indptr[i]; p < csr.indptr[i + 1]; ++p) {
      const auto k = position[csr.indices[p]];
      if (k < 0) continue;
      out.indices.push_back(k);
      out.values.push_back(csr.values[p]);
    }
    out.indptr[i + 1] = static_cast<std::int64_t>(out.indices.size());
  }
  return out;
}

}  // namespace kotml::data
