#pragma once
// Sparse matrices of the preprocessing pipeline: host CSR (io::CsrMatrix) and its
// device mirror for kernels, plus the two structural operations prep needs.

#include <cstdint>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/io/anndata.hpp"

namespace kotml::data {

using HostCsr = io::CsrMatrix<float>;

/// A CSR matrix in device memory (read-only views).
struct DeviceCsr {
  std::int64_t rows = 0, cols = 0;
  Vector<const std::int64_t> indptr;
  Vector<const io::SparseIndex> indices;
  Vector<const float> values;
};

/// Device views of csr; on a host-only build they alias csr's memory, so csr
/// must outlive them.
DeviceCsr to_device(const HostCsr& csr);

/// The transpose (equivalently: the CSC form of the input), built by a stable
/// counting sort, so columns list their rows in ascending order.
HostCsr transpose(const HostCsr& csr);

/// Collective: the transpose of a matrix whose rows lie on comm's ranks in
/// contiguous blocks, in rank order (this rank holds `rows`, the matrix's rows
/// [row_begin, row_begin + rows.rows) of total_rows). Rank r receives the
/// columns dist::block_of(rows.cols, size, r) as its rows, each listing its
/// global row numbers in ascending order: rows [begin, end) of what transpose()
/// gives for the whole matrix, bit for bit. Every rank passes the same
/// rows.cols and total_rows. Error when total_rows does not fit the 32-bit
/// indices; InternalError when the blocks do not tile [0, total_rows).
/// Traffic: every stored value once, 8 bytes each, plus one count per column
/// and rank.
HostCsr transpose_to_column_blocks(const dist::Comm& comm, const HostCsr& rows, std::int64_t row_begin,
                                   std::int64_t total_rows);

/// Collective: rows of a matrix whose rows lie on comm's ranks in contiguous
/// blocks, in rank order (this rank holds `rows`, the matrix's rows
/// [row_begin, row_begin + rows.rows)), fetched by global row number: every
/// rank passes the rows it wants, ascending, and they are appended to `out`
/// (the same columns) in that order, from whichever rank holds them; a rank's
/// own rows never leave memory. InternalError when a wanted row is held by no
/// rank or the list is not ascending. Traffic: each wanted row once.
void fetch_rows(const dist::Comm& comm, const HostCsr& rows, std::int64_t row_begin,
                const std::vector<std::int64_t>& wanted, HostCsr& out);

/// Appends row `row` of `from` to `out` (the same columns).
void append_row(HostCsr& out, const HostCsr& from, std::int64_t row);

/// The given columns, renumbered 0.. in the order listed (ascending input keeps
/// indices sorted).
HostCsr select_columns(const HostCsr& csr, const std::vector<std::int64_t>& columns);
/// The same for rows [row_begin, row_end) only, renumbered 0.. .
HostCsr select_columns(const HostCsr& csr, const std::vector<std::int64_t>& columns, std::int64_t row_begin,
                       std::int64_t row_end);

}  // namespace kotml::data
