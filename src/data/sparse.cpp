// Structural operations on host CSR matrices. They move data rather than compute
// on it; each is one linear pass.

#include "kotml/data/sparse.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>

#include "kotml/core/error.hpp"
#include "kotml/dist/partition.hpp"
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

namespace {

/// The transpose numbers the input's rows in its 32-bit column indices.
void check_transposable(std::int64_t rows) {
  constexpr std::int64_t most = std::int64_t(std::numeric_limits<io::SparseIndex>::max()) + 1;
  if (rows > most)
    throw Error("", "", "a sparse matrix of " + std::to_string(rows) +
                " cells cannot be transposed: kotml numbers sparse columns in 32 bits (at most " +
                std::to_string(most) + ")");
}

}  // namespace

HostCsr transpose(const HostCsr& csr) {
  check_transposable(csr.rows);
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

namespace {

/// One exchanged entry: an index (a global row, or a column) in the high 32
/// bits, the value's bits in the low 32 (indices are below 2^31, so the word is
/// non-negative).
std::int64_t pack_entry(std::int64_t index, float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return static_cast<std::int64_t>((static_cast<std::uint64_t>(index) << 32) | bits);
}

void unpack_entry(std::int64_t word, io::SparseIndex& index, float& value) {
  const auto u = static_cast<std::uint64_t>(word);
  index = static_cast<io::SparseIndex>(u >> 32);
  const auto bits = static_cast<std::uint32_t>(u & 0xffffffffu);
  std::memcpy(&value, &bits, sizeof value);
}

void check_row_blocks(const dist::Comm& comm, const HostCsr& rows, std::int64_t row_begin, std::int64_t total_rows) {
  const auto blocks = comm.allgatherv(std::vector<std::int64_t>{row_begin, rows.rows, rows.cols});
  std::int64_t next = 0;
  bool tiled = true;
  for (int r = 0; r < comm.size(); ++r) {
    const auto* b = blocks.data() + 3 * r;
    tiled = tiled && b[0] == next && b[1] >= 0 && b[2] == rows.cols;
    next = b[0] + b[1];
  }
  if (!tiled || next != total_rows)
    throw InternalError("transpose_to_column_blocks: the ranks' rows do not tile [0, " + std::to_string(total_rows) +
                        ") in rank order, or their column counts differ");
}

}  // namespace

HostCsr transpose_to_column_blocks(const dist::Comm& comm, const HostCsr& rows, std::int64_t row_begin,
                                   std::int64_t total_rows) {
  // Checked before anything is sent, on every rank alike (the sizes are shared).
  check_transposable(total_rows);
  check_row_blocks(comm, rows, row_begin, total_rows);
  HostCsr local = transpose(rows);  // columns × local rows, rows ascending
  if (comm.size() == 1) return local;  // row_begin is 0: its rows are global already

  // To every other rank q: the entry count of each of its columns, then their
  // entries, column after column. This rank's own share never leaves `local`.
  const auto ranks = static_cast<std::size_t>(comm.size());
  std::vector<std::int64_t> send, send_counts(ranks, 0);
  send.reserve(local.values.size() + static_cast<std::size_t>(rows.cols));
  for (int q = 0; q < comm.size(); ++q) {
    if (q == comm.rank()) continue;
    const dist::Block block = dist::block_of(rows.cols, comm.size(), q);
    const std::size_t start = send.size();
    for (std::int64_t j = block.begin; j < block.end; ++j) send.push_back(local.indptr[j + 1] - local.indptr[j]);
    for (std::int64_t p = local.indptr[block.begin]; p < local.indptr[block.end]; ++p)
      send.push_back(pack_entry(row_begin + local.indices[static_cast<std::size_t>(p)],
                                local.values[static_cast<std::size_t>(p)]));
    send_counts[static_cast<std::size_t>(q)] = static_cast<std::int64_t>(send.size() - start);
  }
  std::vector<std::int64_t> recv_counts;
  const auto received = comm.alltoallv(send, send_counts, recv_counts);
  send = {};

  // Rank r's rows precede rank r + 1's, so taking the sources in rank order
  // keeps every column's rows ascending.
  const dist::Block mine = dist::block_of(rows.cols, comm.size(), comm.rank());
  const std::int64_t width = mine.end - mine.begin;
  const auto self = static_cast<std::size_t>(comm.rank());
  HostCsr out;
  out.rows = width;
  out.cols = total_rows;
  out.indptr.assign(static_cast<std::size_t>(width + 1), 0);
  std::vector<std::size_t> source_start(ranks);
  std::size_t offset = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    source_start[r] = offset;
    for (std::int64_t j = 0; j < width; ++j)
      out.indptr[static_cast<std::size_t>(j + 1)] +=
          r == self ? local.indptr[static_cast<std::size_t>(mine.begin + j + 1)] -
                          local.indptr[static_cast<std::size_t>(mine.begin + j)]
                    : received[offset + static_cast<std::size_t>(j)];
    offset += static_cast<std::size_t>(recv_counts[r]);
  }
  for (std::int64_t j = 0; j < width; ++j)
    out.indptr[static_cast<std::size_t>(j + 1)] += out.indptr[static_cast<std::size_t>(j)];
  out.indices.resize(static_cast<std::size_t>(out.indptr.back()));
  out.values.resize(out.indices.size());
  std::vector<std::int64_t> next(out.indptr.begin(), out.indptr.end() - 1);
  for (std::size_t r = 0; r < ranks; ++r) {
    if (r == self) {
      for (std::int64_t j = 0; j < width; ++j)
        for (std::int64_t p = local.indptr[static_cast<std::size_t>(mine.begin + j)];
             p < local.indptr[static_cast<std::size_t>(mine.begin + j + 1)]; ++p) {
          const auto q = static_cast<std::size_t>(next[static_cast<std::size_t>(j)]++);
          out.indices[q] = static_cast<io::SparseIndex>(row_begin + local.indices[static_cast<std::size_t>(p)]);
          out.values[q] = local.values[static_cast<std::size_t>(p)];
        }
      continue;
    }
    const std::int64_t* counts = received.data() + source_start[r];
    const std::int64_t* entry = counts + width;
    for (std::int64_t j = 0; j < width; ++j)
      for (std::int64_t k = 0; k < counts[j]; ++k, ++entry) {
        const auto q = static_cast<std::size_t>(next[static_cast<std::size_t>(j)]++);
        unpack_entry(*entry, out.indices[q], out.values[q]);
      }
  }
  return out;
}

void fetch_rows(const dist::Comm& comm, const HostCsr& rows, std::int64_t row_begin,
                const std::vector<std::int64_t>& wanted, HostCsr& out) {
  const bool ascending = std::is_sorted(wanted.begin(), wanted.end());
  if (!comm.all(ascending && out.cols == rows.cols && static_cast<std::int64_t>(out.indptr.size()) == out.rows + 1))
    throw InternalError("fetch_rows: the wanted rows are not ascending, or the output does not fit the rows");
  const auto wanted_by_all = comm.allgatherv(wanted);
  const auto counts = comm.allgatherv(std::vector<std::int64_t>{static_cast<std::int64_t>(wanted.size())});
  const std::int64_t row_end = row_begin + rows.rows;
  const auto ranks = static_cast<std::size_t>(comm.size());
  const auto self = static_cast<std::size_t>(comm.rank());
  // The wanted rows of rank q that this rank holds: a run of q's list.
  const auto held_of = [&](std::size_t q) {
    std::size_t offset = 0;
    for (std::size_t r = 0; r < q; ++r) offset += static_cast<std::size_t>(counts[r]);
    const auto* first = wanted_by_all.data() + offset;
    const auto* last = first + counts[q];
    first = std::lower_bound(first, last, row_begin);
    return std::make_pair(first, std::lower_bound(first, last, row_end));
  };

  // To every other rank q: for each row it wants that this rank holds, in q's
  // order, its length and then its entries.
  std::vector<std::int64_t> send_counts(ranks, 0);
  const auto row_length = [&](const std::int64_t* w) {
    const auto i = static_cast<std::size_t>(*w - row_begin);
    return rows.indptr[i + 1] - rows.indptr[i];
  };
  for (std::size_t q = 0; q < ranks; ++q) {
    if (q == self) continue;
    const auto [first, last] = held_of(q);
    for (const auto* w = first; w != last; ++w) send_counts[q] += 1 + row_length(w);
  }
  std::vector<std::int64_t> send(static_cast<std::size_t>(std::accumulate(send_counts.begin(), send_counts.end(),
                                                                          std::int64_t(0))));
  std::size_t at = 0;
  for (std::size_t q = 0; q < ranks; ++q) {
    if (q == self) continue;
    const auto [first, last] = held_of(q);
    for (const auto* w = first; w != last; ++w) {
      const auto i = static_cast<std::size_t>(*w - row_begin);
      send[at++] = rows.indptr[i + 1] - rows.indptr[i];
      for (auto p = rows.indptr[i]; p < rows.indptr[i + 1]; ++p)
        send[at++] = pack_entry(rows.indices[static_cast<std::size_t>(p)], rows.values[static_cast<std::size_t>(p)]);
    }
  }
  std::vector<std::int64_t> recv_counts;
  const auto received = comm.alltoallv(send, send_counts, recv_counts);
  send = {};

  // The holders' blocks come in rank order and the list is ascending, so taking
  // the sources in rank order appends the rows in the order asked.
  const auto [own_first, own_last] = held_of(self);
  std::int64_t own_entries = 0;
  for (const auto* w = own_first; w != own_last; ++w) own_entries += row_length(w);
  const std::int64_t rows_before = out.rows;
  auto filled = out.values.size();
  // Each received row is one length word and its entries.
  const auto received_words = static_cast<std::size_t>(
      std::accumulate(recv_counts.begin(), recv_counts.end(), std::int64_t(0)));
  out.indices.resize(filled + received_words + static_cast<std::size_t>(own_entries));  // trimmed below
  out.values.resize(out.indices.size());
  out.indptr.reserve(out.indptr.size() + wanted.size());
  const auto append = [&](std::int64_t length) {
    out.indptr.push_back(out.indptr.back() + length);
    ++out.rows;
  };
  std::size_t k = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    if (r == self) {
      for (const auto* w = own_first; w != own_last; ++w) {
        const auto i = static_cast<std::size_t>(*w - row_begin);
        const auto first = static_cast<std::ptrdiff_t>(rows.indptr[i]), last = static_cast<std::ptrdiff_t>(rows.indptr[i + 1]);
        std::copy(rows.indices.begin() + first, rows.indices.begin() + last, out.indices.begin() + static_cast<std::ptrdiff_t>(filled));
        std::copy(rows.values.begin() + first, rows.values.begin() + last, out.values.begin() + static_cast<std::ptrdiff_t>(filled));
        filled += static_cast<std::size_t>(last - first);
        append(last - first);
      }
      continue;
    }
    const std::size_t source_end = k + static_cast<std::size_t>(recv_counts[r]);
    while (k < source_end) {
      const std::int64_t length = received[k++];
      for (std::int64_t e = 0; e < length; ++e, ++k, ++filled) unpack_entry(received[k], out.indices[filled], out.values[filled]);
      append(length);
    }
  }
  out.indices.resize(filled);
  out.values.resize(filled);
  if (!comm.all(out.rows - rows_before == static_cast<std::int64_t>(wanted.size())))
    throw InternalError("fetch_rows: a wanted row is held by no rank");
}

void append_row(HostCsr& out, const HostCsr& from, std::int64_t row) {
  const auto first = static_cast<std::ptrdiff_t>(from.indptr[static_cast<std::size_t>(row)]);
  const auto last = static_cast<std::ptrdiff_t>(from.indptr[static_cast<std::size_t>(row) + 1]);
  out.indices.insert(out.indices.end(), from.indices.begin() + first, from.indices.begin() + last);
  out.values.insert(out.values.end(), from.values.begin() + first, from.values.begin() + last);
  out.indptr.push_back(static_cast<std::int64_t>(out.values.size()));
  ++out.rows;
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
