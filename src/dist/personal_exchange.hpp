#pragma once
// The point-to-point halves of Comm::alltoallv, once the counts are known:
// values from send + send_displs[r] (send_counts[r] of them) go to rank r, and
// those from rank r land at out + recv_displs[r] (recv_counts[r] of them), as
// MPI_Alltoallv puts them. Shares of no values are no messages.

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace kotml::dist {

struct ExchangeLayout {
  std::vector<std::int64_t> send_counts, send_displs, recv_counts, recv_displs;
};

/// One message from every rank to every rank it has values for.
void exchange_direct(const std::int64_t* send, std::int64_t* out, const ExchangeLayout& layout, int rank,
                     MPI_Comm comm);

/// Whether every message of exchange_through_grid fits MPI's int counts, as
/// seen from this rank (the first-hop messages it sends, the second-hop ones it
/// receives).
bool grid_messages_fit(const ExchangeLayout& layout, int rank);

/// Two hops through the ranks of an ExchangeGrid (kotml/dist/exchange_grid.hpp):
/// one header of counts and one message of values to each rank of this rank's
/// row, then one message of values down each column. The same result as
/// exchange_direct, bit for bit. Every rank must have grid_messages_fit.
void exchange_through_grid(const std::int64_t* send, std::int64_t* out, const ExchangeLayout& layout, int rank,
                           MPI_Comm comm);

}  // namespace kotml::dist
