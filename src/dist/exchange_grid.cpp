#include "kotml/dist/exchange_grid.hpp"

#include <algorithm>
#include <limits>

#include "kotml/core/error.hpp"
#include "personal_exchange.hpp"

namespace kotml::dist {

ExchangeGrid::ExchangeGrid(int ranks) : ranks_(ranks) {
  if (ranks < 1) throw InternalError("ExchangeGrid: " + std::to_string(ranks) + " ranks");
  while (width_ * width_ < ranks) ++width_;
}

std::vector<int> ExchangeGrid::column(int c) const {
  std::vector<int> members;
  for (int r = c; r < ranks_; r += width_) members.push_back(r);
  return members;
}

int ExchangeGrid::via(int s, int c) const {
  const int m = s / width_ * width_ + c;
  return m < ranks_ ? m : m - width_;
}

std::vector<int> ExchangeGrid::sources_through(int m) const {
  const int row_begin = m / width_ * width_;
  std::vector<int> sources;
  for (int s = row_begin; s < std::min(row_begin + width_, ranks_); ++s) sources.push_back(s);
  // No rank below m, but a row below: that short row's ranks lack m's column.
  if (m + width_ >= ranks_)
    for (int s = row_begin + width_; s < ranks_; ++s) sources.push_back(s);
  return sources;
}

namespace {

/// Tags no other exchange on a kotml communicator uses (apsp's and gw's row
/// gathers send with tag 0).
constexpr int direct_tag = 7919;
constexpr int header_tag = 7920;
constexpr int first_hop_tag = 7921;
constexpr int second_hop_tag = 7922;

constexpr auto int_limit = static_cast<std::int64_t>(std::numeric_limits<int>::max());

void post_receive(std::vector<MPI_Request>& requests, std::int64_t* buffer, std::int64_t count, int from, int tag,
                  MPI_Comm comm) {
  requests.emplace_back();
  MPI_Irecv(buffer, static_cast<int>(count), MPI_INT64_T, from, tag, comm, &requests.back());
}

void post_send(std::vector<MPI_Request>& requests, const std::int64_t* buffer, std::int64_t count, int to, int tag,
               MPI_Comm comm) {
  requests.emplace_back();
  MPI_Isend(buffer, static_cast<int>(count), MPI_INT64_T, to, tag, comm, &requests.back());
}

void wait_all(std::vector<MPI_Request>& requests) {
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  requests.clear();
}

/// The values this rank sends through the rank of `column` that forwards them:
/// those for the column's ranks, in their order.
std::int64_t column_total(const ExchangeLayout& layout, const std::vector<int>& column) {
  std::int64_t total = 0;
  for (int d : column) total += layout.send_counts[static_cast<std::size_t>(d)];
  return total;
}

/// The values rank m forwards to this rank: those from m's sources.
std::int64_t forwarded_total(const ExchangeLayout& layout, const ExchangeGrid& grid, int m) {
  std::int64_t total = 0;
  for (int s : grid.sources_through(m)) total += layout.recv_counts[static_cast<std::size_t>(s)];
  return total;
}

/// A run of values held by a forwarding rank.
struct Piece {
  const std::int64_t* values = nullptr;
  std::int64_t count = 0;
};

}  // namespace

// kotml's exchanges are mostly sparse (a donor's sums go to its home rank, a
// matrix block to its owner), and a linear MPI_Alltoallv posts a request for
// every pair whatever its count: SimGrid's copy of Open MPI's linear algorithm
// does, and at 1024 simulated ranks spent the whole run matching 2 × 1023
// requests per rank for the few dozen messages of training's reduce H
// (perf/RESULTS.md, "train at 1024 simulated ranks").
void exchange_direct(const std::int64_t* send, std::int64_t* out, const ExchangeLayout& layout, int rank,
                     MPI_Comm comm) {
  const auto self = static_cast<std::size_t>(rank);
  std::vector<MPI_Request> requests;
  for (std::size_t r = 0; r < layout.recv_counts.size(); ++r)
    if (r != self && layout.recv_counts[r] != 0)
      post_receive(requests, out + layout.recv_displs[r], layout.recv_counts[r], static_cast<int>(r), direct_tag,
                   comm);
  for (std::size_t r = 0; r < layout.send_counts.size(); ++r)
    if (r != self && layout.send_counts[r] != 0)
      post_send(requests, send + layout.send_displs[r], layout.send_counts[r], static_cast<int>(r), direct_tag, comm);
  std::copy(send + layout.send_displs[self], send + layout.send_displs[self] + layout.send_counts[self],
            out + layout.recv_displs[self]);
  wait_all(requests);
}

bool grid_messages_fit(const ExchangeLayout& layout, int rank) {
  const ExchangeGrid grid(static_cast<int>(layout.send_counts.size()));
  for (int c = 0; c < grid.width(); ++c)
    if (column_total(layout, grid.column(c)) > int_limit) return false;
  for (int m : grid.column(grid.column_of(rank)))
    if (forwarded_total(layout, grid, m) > int_limit) return false;
  return true;
}

void exchange_through_grid(const std::int64_t* send, std::int64_t* out, const ExchangeLayout& layout, int rank,
                           MPI_Comm comm) {
  const ExchangeGrid grid(static_cast<int>(layout.send_counts.size()));
  const int width = grid.width();
  const int my_column = grid.column_of(rank);
  const auto sources = grid.sources_through(rank);
  std::vector<MPI_Request> requests;

  // Hop 1, headers: to the rank forwarding each column, the count for each of
  // its ranks. Every source sends one, empty or not, so each rank knows what
  // it receives without a probe.
  std::vector<std::vector<int>> columns(static_cast<std::size_t>(width));
  std::vector<std::vector<std::int64_t>> headers_out(static_cast<std::size_t>(width));
  for (int c = 0; c < width; ++c) {
    const auto cu = static_cast<std::size_t>(c);
    columns[cu] = grid.column(c);
    for (int d : columns[cu]) headers_out[cu].push_back(layout.send_counts[static_cast<std::size_t>(d)]);
  }
  const auto& column_ranks = columns[static_cast<std::size_t>(my_column)];
  const auto per_source = column_ranks.size();
  std::vector<std::int64_t> headers_in(sources.size() * per_source);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (sources[i] == rank)
      std::copy(headers_out[static_cast<std::size_t>(my_column)].begin(),
                headers_out[static_cast<std::size_t>(my_column)].end(), headers_in.begin() + i * per_source);
    else
      post_receive(requests, headers_in.data() + i * per_source, static_cast<std::int64_t>(per_source), sources[i],
                   header_tag, comm);
  }
  for (int c = 0; c < width; ++c)
    if (c != my_column)
      post_send(requests, headers_out[static_cast<std::size_t>(c)].data(),
                static_cast<std::int64_t>(headers_out[static_cast<std::size_t>(c)].size()), grid.via(rank, c),
                header_tag, comm);
  wait_all(requests);

  // Hop 1, values: each column's values, its ranks in order, to the rank that
  // forwards them; this rank's own column stays in `send`.
  std::vector<std::vector<std::int64_t>> first_out(static_cast<std::size_t>(width));
  for (int c = 0; c < width; ++c) {
    if (c == my_column) continue;
    auto& packed = first_out[static_cast<std::size_t>(c)];
    packed.reserve(static_cast<std::size_t>(column_total(layout, columns[static_cast<std::size_t>(c)])));
    for (int d : columns[static_cast<std::size_t>(c)]) {
      const auto du = static_cast<std::size_t>(d);
      packed.insert(packed.end(), send + layout.send_displs[du], send + layout.send_displs[du] + layout.send_counts[du]);
    }
  }
  std::vector<std::size_t> first_in_start(sources.size() + 1, 0);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    std::int64_t total = 0;
    if (sources[i] != rank)
      for (std::size_t k = 0; k < per_source; ++k) total += headers_in[i * per_source + k];
    first_in_start[i + 1] = first_in_start[i] + static_cast<std::size_t>(total);
  }
  std::vector<std::int64_t> first_in(first_in_start.back());
  for (std::size_t i = 0; i < sources.size(); ++i)
    if (first_in_start[i + 1] > first_in_start[i])
      post_receive(requests, first_in.data() + first_in_start[i],
                   static_cast<std::int64_t>(first_in_start[i + 1] - first_in_start[i]), sources[i], first_hop_tag,
                   comm);
  for (int c = 0; c < width; ++c) {
    const auto& packed = first_out[static_cast<std::size_t>(c)];
    if (!packed.empty())
      post_send(requests, packed.data(), static_cast<std::int64_t>(packed.size()), grid.via(rank, c), first_hop_tag,
                comm);
  }
  wait_all(requests);
  first_out = {};

  // What this rank forwards: from source i, for the k-th rank of its column.
  std::vector<Piece> pieces(sources.size() * per_source);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const std::int64_t* next = first_in.data() + first_in_start[i];
    for (std::size_t k = 0; k < per_source; ++k) {
      const auto d = static_cast<std::size_t>(column_ranks[k]);
      pieces[i * per_source + k] = sources[i] == rank
                                       ? Piece{send + layout.send_displs[d], layout.send_counts[d]}
                                       : Piece{next, headers_in[i * per_source + k]};
      if (sources[i] != rank) next += headers_in[i * per_source + k];
    }
  }

  // Hop 2: down the column, each rank's values from every source in rank order.
  std::vector<std::vector<std::int64_t>> second_out(per_source);
  std::size_t self_index = 0;
  for (std::size_t k = 0; k < per_source; ++k) {
    if (column_ranks[k] == rank) {
      self_index = k;
      continue;
    }
    for (std::size_t i = 0; i < sources.size(); ++i) {
      const Piece& piece = pieces[i * per_source + k];
      second_out[k].insert(second_out[k].end(), piece.values, piece.values + piece.count);
    }
  }
  std::vector<std::size_t> second_in_start(per_source + 1, 0);
  for (std::size_t k = 0; k < per_source; ++k)
    second_in_start[k + 1] =
        second_in_start[k] +
        (column_ranks[k] == rank ? 0 : static_cast<std::size_t>(forwarded_total(layout, grid, column_ranks[k])));
  std::vector<std::int64_t> second_in(second_in_start.back());
  for (std::size_t k = 0; k < per_source; ++k)
    if (second_in_start[k + 1] > second_in_start[k])
      post_receive(requests, second_in.data() + second_in_start[k],
                   static_cast<std::int64_t>(second_in_start[k + 1] - second_in_start[k]), column_ranks[k],
                   second_hop_tag, comm);
  for (std::size_t k = 0; k < per_source; ++k)
    if (!second_out[k].empty())
      post_send(requests, second_out[k].data(), static_cast<std::int64_t>(second_out[k].size()), column_ranks[k],
                second_hop_tag, comm);
  // What this rank forwards to itself lands while the column's messages travel.
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const Piece& piece = pieces[i * per_source + self_index];
    std::copy(piece.values, piece.values + piece.count, out + layout.recv_displs[static_cast<std::size_t>(sources[i])]);
  }
  wait_all(requests);

  for (std::size_t k = 0; k < per_source; ++k) {
    if (column_ranks[k] == rank) continue;
    const std::int64_t* next = second_in.data() + second_in_start[k];
    for (int s : grid.sources_through(column_ranks[k])) {
      const auto su = static_cast<std::size_t>(s);
      std::copy(next, next + layout.recv_counts[su], out + layout.recv_displs[su]);
      next += layout.recv_counts[su];
    }
  }
}

}  // namespace kotml::dist
