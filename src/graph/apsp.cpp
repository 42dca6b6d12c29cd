#include "kotml/graph/apsp.hpp"

#include <mpi.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "kotml/core/error.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/math.hpp"
#include "kotml/core/phase_timers.hpp"
#include "kotml/core/progress.hpp"
#include "kotml/core/simulation.hpp"
#include "kotml/dist/partition.hpp"
#include "kotml/graph/dijkstra.hpp"
#include "kotml/io/raw_file.hpp"

namespace kotml::graph {
namespace {

template <class T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<float>() { return MPI_FLOAT; }
template <>
MPI_Datatype mpi_type<double>() { return MPI_DOUBLE; }

void fill_range(Kokkos::View<NodeId*, MemSpace> ids, std::int64_t first) {
  Kokkos::parallel_for(
      "kotml::graph::source_range", Kokkos::RangePolicy<ExecSpace>(0, ids.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t r) { ids(r) = static_cast<NodeId>(first + r); });
}

/// The shortest-path rows of sources[first, last) into rows(0 .. last-first-1, :).
/// Dijkstra from each source costs about the same on a connected graph, so a
/// sampled simulation times a few and charges the rest (sim::like_items).
template <class T>
void compute_rows(const LocalityOrderedGraph& g, const std::vector<NodeId>& sources, std::int64_t first,
                  std::int64_t last, Kokkos::View<NodeId*, HostSpace> ids_h,
                  Kokkos::View<T**, Kokkos::LayoutRight, MemSpace> rows) {
  for (std::int64_t r = first; r < last; ++r) ids_h(r - first) = sources[r];
  auto ids = Kokkos::create_mirror_view_and_copy(MemSpace(), ids_h);
  sim::like_items("kotml::graph::shortest_paths", last - first, [&](std::int64_t from, std::int64_t to) {
    const auto some = Kokkos::make_pair(from, to);
    shortest_paths<T>(g, Kokkos::subview(ids, some), Kokkos::subview(rows, some, Kokkos::ALL));
  });
}

/// How many lengths of rows(0 .. count-1, :) are infinite. Each rank counts
/// its own rows: on rank 0 alone this scan of all n² lengths was a serial part.
template <class T>
std::int64_t count_infinite(Kokkos::View<const T**, Kokkos::LayoutRight, MemSpace> rows, std::int64_t count) {
  const T* lengths = rows.data();  // contiguous rows
  std::int64_t infinite = 0;
  Kokkos::parallel_reduce(
      "kotml::graph::count_infinite", Kokkos::RangePolicy<ExecSpace>(0, count * rows.extent(1)),
      KOKKOS_LAMBDA(const std::int64_t e, std::int64_t& sum) { sum += kmath::isfinite(lengths[e]) ? 0 : 1; },
      infinite);
  return infinite;
}

/// Where a chunk's rows come from: Dijkstra from each source on the ordered
/// graph, or rows this rank already holds (the landmarks', which choosing them
/// computed on every rank), copied instead of computed again.
class RowSource {
 public:
  RowSource(const LocalityOrderedGraph& g, const std::vector<NodeId>& sources)
      : graph_(&g), sources_(&sources), n_(g.graph.n) {}
  explicit RowSource(const Landmarks& known)
      : known_(known.distances), sources_(&known.nodes), n_(known.distances.extent(1)) {}

  std::int64_t n() const { return n_; }
  const std::vector<NodeId>& sources() const { return *sources_; }

  /// Throws Error for a source that is not a node (a landmark always is one).
  void check() const {
    for (NodeId s : *sources_)
      require(s >= 0 && s < n_, "", "sources",
              [&] { return "source node " + std::to_string(s) + " is not in the graph"; });
    internal_check(graph_ != nullptr || known_.extent(0) == sources_->size(),
                   "apsp: the landmarks have " + std::to_string(known_.extent(0)) + " rows for " +
                       std::to_string(sources_->size()) + " nodes");
  }

  /// Rows [begin, end) of the source list into rows(0 .. end-begin-1, :).
  template <class T>
  void fill(std::int64_t begin, std::int64_t end, Kokkos::View<NodeId*, HostSpace> ids_h,
            Kokkos::View<T**, Kokkos::LayoutRight, MemSpace> rows) const {
    if (graph_ != nullptr) {
      const timers::Scope timed("dijkstra");
      compute_rows<T>(*graph_, *sources_, begin, end, ids_h, rows);
      return;
    }
    const timers::Scope timed("landmark rows");
    const auto known = known_;
    const std::int64_t n = n_;
    Kokkos::parallel_for(
        "kotml::graph::copy_known_rows",
        Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<2>>({0, 0}, {end - begin, n}),
        KOKKOS_LAMBDA(const std::int64_t r, const std::int64_t v) {
          rows(r, v) = static_cast<T>(known(begin + r, v));
        });
  }

 private:
  const LocalityOrderedGraph* graph_ = nullptr;
  Kokkos::View<const double**, Kokkos::LayoutRight, MemSpace> known_;
  const std::vector<NodeId>* sources_;
  std::int64_t n_;
};

/// One chunk of a rank's rows: its sources, the lengths on the device, and
/// their host view (the same memory on a host backend).
template <class T>
struct RowChunk {
  RowChunk(std::int64_t chunk, std::int64_t n)
      : sources_h("kotml::graph::chunk_sources", chunk),
        memory(sim::answer_buffer<T>("kotml::graph::chunk_rows", static_cast<std::size_t>(chunk * n))),
        rows(memory.view.data(), chunk, n),
        host(Kokkos::create_mirror_view(HostSpace(), rows)) {}

  /// Rows [begin, end) of the source list into `host`; how many lengths are infinite.
  std::int64_t fill(const RowSource& source, std::int64_t begin, std::int64_t end) {
    source.fill<T>(begin, end, sources_h, rows);
    const std::int64_t infinite = count_infinite<T>(rows, end - begin);
    Kokkos::deep_copy(host, rows);
    return infinite;
  }

  Kokkos::View<NodeId*, HostSpace> sources_h;
  sim::Folded<T, MemSpace> memory;
  Kokkos::View<T**, Kokkos::LayoutRight, MemSpace> rows;
  typename Kokkos::View<T**, Kokkos::LayoutRight, MemSpace>::HostMirror host;
};

/// How the rows reach the file: one writer per rank when every rank can open
/// the file rank 0 created (each writes its own rows in place), or none, and
/// rank 0 gathers and writes them all.
struct RowWriters {
  std::optional<io::RawFileWriter> own;  // on every rank, or on none
  std::int64_t offset = 0;               // bytes to the dataset's element 0
};

/// Collective. Rank 0 creates the (count × n) dataset, preallocated for
/// in-place writes when every_rank_writes; then every rank tries to open the
/// file, and the ranks write in place only if all of them can.
template <class T>
RowWriters create_output(io::h5::File* file, const std::string& dataset, std::int64_t count, std::int64_t n,
                         bool every_rank_writes, const dist::Comm& comm) {
  std::optional<io::h5::File::RawExtent> extent;
  std::string shown;
  comm.phase([&] {
    if (!comm.is_root()) return;
    shown = file->path();
    if (every_rank_writes)
      extent = file->create_preallocated_dataset<T>(dataset, {count, n});
    else
      file->create_dataset<T>(dataset, {count, n});
  });
  std::string on_disk = extent ? extent->file : std::string();
  std::int64_t offset = extent ? extent->offset : -1;
  comm.bcast_string(on_disk);
  comm.bcast_string(shown);
  comm.bcast(&offset, sizeof offset);
  RowWriters writers;
  if (offset < 0) return writers;
  writers.offset = offset;
  writers.own = io::RawFileWriter::open_existing(on_disk, shown);
  const bool everywhere = comm.all(writers.own.has_value());
  if (!everywhere) {
    writers.own.reset();
    log::note("apsp: not every rank can open " + on_disk +
              " (not on a file system all nodes share?), so rank 0 writes every row");
  }
  return writers;
}

/// Each rank computes its own rows chunk by chunk and writes them into the
/// file in place: no rank waits for another, and the writes of P ranks proceed
/// at once (a parallel file system's bandwidth, not one node's).
template <class T>
std::int64_t write_own_rows(const RowSource& source, dist::Block mine, std::int64_t chunk, RowWriters& writers,
                            const std::string& dataset, const dist::Comm& comm) {
  const std::int64_t n = source.n();
  RowChunk<T> own(chunk, n);
  std::int64_t infinite = 0;  // in this rank's rows
  log::Progress progress("apsp (rank 0's rows)", mine.end - mine.begin, "sources");
  std::optional<Error> write_failure;
  for (std::int64_t begin = mine.begin; begin < mine.end && !write_failure; begin += chunk) {
    const std::int64_t end = std::min(begin + chunk, mine.end);
    infinite += own.fill(source, begin, end);
    const timers::Scope timed("write");
    const std::string what = "/" + dataset + " rows " + std::to_string(begin) + ".." + std::to_string(end - 1);
    try {
      writers.own->write_at(writers.offset + begin * n * static_cast<std::int64_t>(sizeof(T)), own.host.data(),
                            static_cast<std::size_t>((end - begin) * n) * sizeof(T), what);
    } catch (const Error& e) {
      write_failure = e;
    }
    progress.update(end - mine.begin);
  }
  try {
    writers.own->close("/" + dataset);
  } catch (const Error& e) {
    if (!write_failure) write_failure = e;
  }
  comm.agree(write_failure);
  return infinite;
}

/// Ranks work in rounds: each computes its next chunk at the same time, then
/// rank 0 writes its own chunk and receives and writes the others' in rank
/// order. For files that not every rank can reach.
template <class T>
std::int64_t gather_rows_to_root(const RowSource& source, const std::vector<dist::Block>& blocks,
                                 std::int64_t chunk, io::h5::File* file, const std::string& dataset,
                                 const dist::Comm& comm) {
  const std::int64_t n = source.n();
  const dist::Block mine = blocks[comm.rank()];
  std::int64_t largest = 0;
  for (const auto& b : blocks) largest = std::max(largest, b.end - b.begin);
  const std::int64_t rounds = (largest + chunk - 1) / chunk;
  RowChunk<T> own(chunk, n);
  // Rank 0 receives the others' chunks here; its own it writes from `own`.
  std::vector<T> received(comm.is_root() && comm.size() > 1 ? static_cast<std::size_t>(chunk * n) : 0);
  std::int64_t infinite = 0;  // in this rank's rows
  log::Progress progress("apsp", static_cast<std::int64_t>(source.sources().size()), "sources");
  std::int64_t rows_received = 0;  // on rank 0
  std::optional<Error> write_failure;
  for (std::int64_t round = 0; round < rounds; ++round) {
    const std::int64_t begin = std::min(mine.begin + round * chunk, mine.end);
    const std::int64_t end = std::min(begin + chunk, mine.end);
    if (end > begin) infinite += own.fill(source, begin, end);
    const timers::Scope timed("gather and write");
    if (!comm.is_root()) {
      if (end > begin)
        MPI_Send(own.host.data(), static_cast<int>((end - begin) * n), mpi_type<T>(), 0, 0, comm.raw());
      continue;
    }
    for (int r = 0; r < comm.size(); ++r) {
      const std::int64_t rb = std::min(blocks[r].begin + round * chunk, blocks[r].end);
      const std::int64_t re = std::min(rb + chunk, blocks[r].end);
      if (re <= rb) continue;
      const T* block = own.host.data();
      if (r != 0) {
        MPI_Recv(received.data(), static_cast<int>((re - rb) * n), mpi_type<T>(), r, 0, comm.raw(),
                 MPI_STATUS_IGNORE);
        block = received.data();
      }
      rows_received += re - rb;
      progress.update(rows_received);
      if (write_failure) continue;  // keep receiving, so no sender blocks forever
      try {
        file->write_row_range<T>(dataset, rb, block, static_cast<std::size_t>((re - rb) * n));
      } catch (const Error& e) {
        write_failure = e;
      }
    }
  }
  comm.agree(write_failure);
  return infinite;
}

template <class T>
ApspWritten write_rows_impl(const RowSource& source, const ApspOptions& options, const dist::Comm& comm,
                            io::h5::File* file, const std::string& dataset) {
  const std::int64_t n = source.n();
  const std::int64_t count = static_cast<std::int64_t>(source.sources().size());
  std::vector<dist::Block> blocks;
  std::int64_t largest = 0;
  for (int r = 0; r < comm.size(); ++r) {
    blocks.push_back(dist::block_of(count, comm.size(), r));
    largest = std::max(largest, blocks.back().end - blocks.back().begin);
  }
  // One message must stay below 2^31 elements (MPI counts are int); no chunk
  // is larger than the largest rank's rows.
  const std::int64_t max_rows = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(std::numeric_limits<int>::max() / 2) / std::max<std::int64_t>(n, 1));
  const std::int64_t chunk = std::max<std::int64_t>(1, std::min({options.chunk_rows, max_rows, largest}));

  RowWriters writers = create_output<T>(file, dataset, count, n, options.every_rank_writes, comm);
  ApspWritten written;
  written.every_rank_wrote = writers.own.has_value();
  written.infinite = written.every_rank_wrote
                         ? write_own_rows<T>(source, blocks[comm.rank()], chunk, writers, dataset, comm)
                         : gather_rows_to_root<T>(source, blocks, chunk, file, dataset, comm);
  comm.sum_in_place(&written.infinite, 1);
  return written;
}

/// Collective: the source's rows at the options' precision.
ApspWritten write_rows(const RowSource& source, const ApspOptions& options, const dist::Comm& comm,
                       io::h5::File* file, const std::string& dataset) {
  comm.phase([&] {
    source.check();
    internal_check(!comm.is_root() || file != nullptr, "apsp: rank 0 has no output file");
  });
  if (options.precision == Precision::float32) return write_rows_impl<float>(source, options, comm, file, dataset);
  return write_rows_impl<double>(source, options, comm, file, dataset);
}

}  // namespace

Precision parse_precision(const std::string& text, const std::string& option) {
  if (text == "float32") return Precision::float32;
  if (text == "float64") return Precision::float64;
  throw Error::option(option, "must be float32 or float64, got '" + text + "'");
}

ApspWritten write_shortest_paths(const CsrGraph<MemSpace>& g, const std::vector<NodeId>& sources,
                                 const ApspOptions& options, const dist::Comm& comm, io::h5::File* file,
                                 const std::string& dataset) {
  const LocalityOrderedGraph ordered =
      timers::timed("node order", [&] { return locality_ordered(g, comm.spans_world()); });
  return write_shortest_paths(ordered, sources, options, comm, file, dataset);
}

ApspWritten write_shortest_paths(const LocalityOrderedGraph& ordered, const std::vector<NodeId>& sources,
                                 const ApspOptions& options, const dist::Comm& comm, io::h5::File* file,
                                 const std::string& dataset) {
  return write_rows(RowSource(ordered, sources), options, comm, file, dataset);
}

ApspWritten write_shortest_paths(const Landmarks& landmarks, const ApspOptions& options, const dist::Comm& comm,
                                 io::h5::File* file, const std::string& dataset) {
  return write_rows(RowSource(landmarks), options, comm, file, dataset);
}

template <class T>
Kokkos::View<T**, Kokkos::LayoutRight, MemSpace> shortest_path_rows(const CsrGraph<MemSpace>& g,
                                                                    std::int64_t begin,
                                                                    std::int64_t end) {
  Kokkos::View<NodeId*, MemSpace> ids(no_init("kotml::graph::row_sources"), end - begin);
  fill_range(ids, begin);
  Kokkos::View<T**, Kokkos::LayoutRight, MemSpace> rows(no_init("kotml::graph::rows"),
                                                        end - begin, g.n);
  shortest_paths<T>(g, ids, rows);
  return rows;
}

template Kokkos::View<float**, Kokkos::LayoutRight, MemSpace> shortest_path_rows<float>(
    const CsrGraph<MemSpace>&, std::int64_t, std::int64_t);
template Kokkos::View<double**, Kokkos::LayoutRight, MemSpace> shortest_path_rows<double>(
    const CsrGraph<MemSpace>&, std::int64_t, std::int64_t);

}  // namespace kotml::graph
