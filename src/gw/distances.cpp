#include "kotml/gw/distances.hpp"

#include <algorithm>
#include <cmath>
#include <list>
#include <memory>
#include <unordered_map>
#include <utility>

#include "kotml/core/device_copy.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/math.hpp"
#include "kotml/core/phase_timers.hpp"
#include "kotml/core/simulation.hpp"
#include "kotml/graph/apsp.hpp"
#include "kotml/graph/dijkstra.hpp"
#include "kotml/graph/landmarks.hpp"
#include "kotml/gw/row_partition.hpp"

namespace kotml::gw {
namespace {

using Ids = Kokkos::View<NodeId*, MemSpace>;

Ids to_device(const std::vector<NodeId>& ids) { return device_copy_of<Ids>(ids, "kotml::gw::ids"); }

/// out(i, m) = rows(first + i, anchors(m)).
void gather_columns(DistanceBlock rows, std::int64_t first, Ids anchors, DistanceBlock out) {
  const std::int64_t m_count = anchors.extent(0);
  Kokkos::parallel_for(
      "kotml::gw::gather_columns", Kokkos::RangePolicy<ExecSpace>(0, out.extent(0) * m_count),
      KOKKOS_LAMBDA(const std::int64_t f) {
        const std::int64_t i = f / m_count, m = f % m_count;
        out(i, m) = rows(first + i, anchors(m));
      });
}

/// out(i, m) = cache(slot(m), first + i): anchor m's row, read at this rank's nodes.
void gather_cached(DistanceBlock cache, Ids slot, std::int64_t first, DistanceBlock out) {
  const std::int64_t m_count = slot.extent(0);
  Kokkos::parallel_for(
      "kotml::gw::gather_cached", Kokkos::RangePolicy<ExecSpace>(0, out.extent(0) * m_count),
      KOKKOS_LAMBDA(const std::int64_t f) {
        const std::int64_t i = f / m_count, m = f % m_count;
        out(i, m) = cache(slot(m), first + i);
      });
}

/// cache(slot(r), :) = rows(r, :).
void store_rows(DistanceBlock rows, Ids slot, DistanceBlock cache) {
  const std::int64_t n = cache.extent(1);
  Kokkos::parallel_for(
      "kotml::gw::store_rows", Kokkos::RangePolicy<ExecSpace>(0, slot.extent(0) * n),
      KOKKOS_LAMBDA(const std::int64_t f) {
        const std::int64_t r = f / n, v = f % n;
        cache(slot(r), v) = rows(r, v);
      });
}

/// Euclidean distance between embedding rows, summed in double.
void embedding_distances(DistanceBlock z, Ids anchors, std::int64_t first, DistanceBlock out) {
  const std::int64_t m_count = anchors.extent(0);
  const std::int64_t dims = z.extent(1);
  Kokkos::parallel_for(
      "kotml::gw::landmark_distances", Kokkos::RangePolicy<ExecSpace>(0, out.extent(0) * m_count),
      KOKKOS_LAMBDA(const std::int64_t f) {
        const std::int64_t i = first + f / m_count, a = anchors(f % m_count);
        double s = 0.0;
        for (std::int64_t l = 0; l < dims; ++l) {
          const double diff = static_cast<double>(z(i, l)) - static_cast<double>(z(a, l));
          s += diff * diff;
        }
        out(f / m_count, f % m_count) = static_cast<float>(kmath::sqrt(s));
      });
}

void transpose_to_float(Kokkos::View<double**, Kokkos::LayoutRight, MemSpace> landmark_rows,
                        DistanceBlock z) {
  const std::int64_t dims = z.extent(1);
  Kokkos::parallel_for(
      "kotml::gw::landmark_embedding", Kokkos::RangePolicy<ExecSpace>(0, z.extent(0) * dims),
      KOKKOS_LAMBDA(const std::int64_t f) {
        z(f / dims, f % dims) = static_cast<float>(landmark_rows(f % dims, f / dims));
      });
}

// ------------------------------------------------------------------ precomputed
class PrecomputedDistances final : public DistanceProvider {
 public:
  PrecomputedDistances(std::int64_t n, DistanceBlock own_rows, const dist::Comm& comm)
      : n_(n), own_(plan_rows(n, comm.size(), comm.rank())), rows_(own_rows) {}

  std::int64_t size() const override { return n_; }

  void distances(const std::vector<NodeId>& anchors, std::int64_t first_row,
                 DistanceBlock block) override {
    const std::int64_t count = block.extent(0);
    const Ids a = to_device(anchors);
    if (first_row != own_.begin || count != own_.end - own_.begin)
      throw InternalError("precomputed distances serve each rank its own plan rows");
    // The matrix may be asymmetric: columns are read, as TorchGW's C[:, idx].
    gather_columns(rows_, 0, a, block);
  }

 private:
  std::int64_t n_;
  dist::Block own_;
  DistanceBlock rows_;
};

void validate_rows(const std::vector<float>& values, std::int64_t first_row, std::int64_t n,
                   const std::string& file, const std::string& element) {
  for (std::size_t f = 0; f < values.size(); ++f) {
    const float v = values[f];
    const std::int64_t i = first_row + static_cast<std::int64_t>(f) / n, j = static_cast<std::int64_t>(f) % n;
    require(!std::isnan(v), file, element,
            [&] { return "missing distance (NaN) at row " + std::to_string(i) + ", column " + std::to_string(j); });
    require(v >= 0.0f, file, element, [&] {
      return "negative distance " + std::to_string(v) + " at row " + std::to_string(i) + ", column " +
             std::to_string(j);
    });
  }
}

DistanceBlock upload(const std::vector<float>& values, std::int64_t rows, std::int64_t n) {
  DistanceBlock d(no_init("kotml::gw::precomputed_rows"), rows, n);
  auto h = Kokkos::create_mirror_view(d);
  std::copy(values.begin(), values.end(), h.data());
  Kokkos::deep_copy(d, h);
  return d;
}

// --------------------------------------------------------------------- dijkstra
class DijkstraDistances final : public DistanceProvider {
 public:
  DijkstraDistances(const graph::CsrGraph<MemSpace>& g, std::int64_t cache_rows,
                    const dist::Comm& comm)
      : g_(graph::locality_ordered(g, false)), cache_rows_(std::max<std::int64_t>(cache_rows, 1)), comm_(&comm) {}

  std::int64_t size() const override { return g_.graph.n; }
  std::int64_t dijkstra_runs() const override { return runs_; }

  void distances(const std::vector<NodeId>& anchors, std::int64_t first_row,
                 DistanceBlock block) override {
    std::vector<NodeId> unique(anchors);
    std::sort(unique.begin(), unique.end());
    unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
    reserve(static_cast<std::int64_t>(unique.size()));

    std::vector<NodeId> missing;
    for (NodeId s : unique)
      if (!slot_of_.count(s)) missing.push_back(s);
    std::vector<NodeId> new_slots;
    for (NodeId s : missing) new_slots.push_back(take_slot(s, unique));
    compute(missing, new_slots);

    std::vector<NodeId> slots;
    for (NodeId s : anchors) slots.push_back(slot_of_.at(s));
    gather_cached(cache_, to_device(slots), first_row, block);
  }

 private:
  /// Grows the cache so that one call's rows always fit.
  void reserve(std::int64_t needed) {
    const std::int64_t capacity = std::max(cache_rows_, needed);
    if (static_cast<std::int64_t>(cache_.extent(0)) >= capacity) return;
    DistanceBlock grown(no_init("kotml::gw::dijkstra_cache"), capacity, g_.graph.n);
    if (cache_.extent(0) > 0)
      Kokkos::deep_copy(Kokkos::subview(grown, Kokkos::make_pair(std::size_t(0), cache_.extent(0)),
                                        Kokkos::ALL()),
                        cache_);
    slot_used_.resize(static_cast<std::size_t>(capacity), false);
    cache_ = grown;
  }

  /// TorchGW's policy: once cache_rows rows are held, evict the oldest row not
  /// needed by the current call before adding one.
  NodeId take_slot(NodeId node, const std::vector<NodeId>& needed) {
    if (static_cast<std::int64_t>(slot_of_.size()) >= cache_rows_) {
      for (auto it = order_.begin(); it != order_.end(); ++it) {
        if (std::binary_search(needed.begin(), needed.end(), *it)) continue;
        slot_used_[static_cast<std::size_t>(slot_of_.at(*it))] = false;
        slot_of_.erase(*it);
        order_.erase(it);
        break;
      }
    }
    const auto free = std::find(slot_used_.begin(), slot_used_.end(), false);
    const NodeId slot = static_cast<NodeId>(free - slot_used_.begin());
    slot_used_[static_cast<std::size_t>(slot)] = true;
    slot_of_[node] = slot;
    order_.push_back(node);
    return slot;
  }

  /// Dijkstra from the missing nodes, split over ranks, rows shared by all.
  void compute(const std::vector<NodeId>& missing, const std::vector<NodeId>& slots) {
    const std::int64_t count = static_cast<std::int64_t>(missing.size());
    if (count == 0) return;
    runs_ += count;
    const auto mine = dist::block_of(count, comm_->size(), comm_->rank());
    const std::vector<NodeId> my_sources(missing.begin() + mine.begin, missing.begin() + mine.end);
    DistanceBlock rows(no_init("kotml::gw::dijkstra_rows"), my_sources.size(), g_.graph.n);
    graph::shortest_paths<float>(g_, to_device(my_sources), rows);
    if (comm_->size() == 1) {
      store_rows(rows, to_device(slots), cache_);
      return;
    }
    DistanceBlock all(no_init("kotml::gw::dijkstra_all_rows"), count, g_.graph.n);
    allgather_rows(*comm_, rows, all);
    store_rows(all, to_device(slots), cache_);
  }

  graph::LocalityOrderedGraph g_;  // Dijkstra's rows, in the caller's node ids
  std::int64_t cache_rows_;
  const dist::Comm* comm_;
  DistanceBlock cache_;
  std::vector<bool> slot_used_;
  std::unordered_map<NodeId, NodeId> slot_of_;
  std::list<NodeId> order_;  // insertion order, oldest first
  std::int64_t runs_ = 0;
};

// --------------------------------------------------------------------- landmark
/// One cloud's landmark embedding z (n × L), in memory that a simulated run
/// with folding shares among the ranks (core/simulation.hpp).
struct Embedding {
  sim::Folded<float, MemSpace> storage;
  DistanceBlock z;
};

/// Every rank asks in the same order (folded memory is matched by its order at
/// the site).
Embedding embedding_memory(const graph::CsrGraph<MemSpace>& g, std::int64_t landmarks, bool same_everywhere) {
  const std::int64_t dims = std::min(landmarks, g.n);
  Embedding e;
  e.storage = sim::folded<float, MemSpace>("kotml::gw::landmark_embedding", static_cast<std::size_t>(g.n * dims),
                                           same_everywhere);
  e.z = DistanceBlock(e.storage.view.data(), g.n, dims);
  return e;
}

void build_embedding(const graph::CsrGraph<MemSpace>& g, DistanceBlock z) {
  const timers::Scope timed("landmarks");
  transpose_to_float(graph::farthest_point_landmarks(g, z.extent(1)).distances, z);
}

/// Collective: z as rank `builder` holds it, on every rank. A receive into
/// folded memory is not copied by SMPI, and needs not be: the builder wrote it.
void broadcast_embedding(const dist::Comm& comm, DistanceBlock z, int builder) {
  const timers::Scope timed("share landmarks");
  auto host = Kokkos::create_mirror_view(z);
  if (comm.rank() == builder) Kokkos::deep_copy(host, z);
  comm.bcast(host.data(), host.span() * sizeof(float), builder);
  if (comm.rank() != builder) Kokkos::deep_copy(z, host);
}

class LandmarkDistances final : public DistanceProvider {
 public:
  explicit LandmarkDistances(Embedding embedding) : embedding_(std::move(embedding)) {}
  std::int64_t size() const override { return embedding_.z.extent(0); }
  std::int64_t dijkstra_runs() const override { return embedding_.z.extent(1); }

  /// Every rank holds the whole embedding, so any rows are computed locally.
  void distances(const std::vector<NodeId>& anchors, std::int64_t first_row,
                 DistanceBlock block) override {
    embedding_distances(embedding_.z, to_device(anchors), first_row, block);
  }

 private:
  Embedding embedding_;  // z: distance of each node to each landmark
};

}  // namespace

std::unique_ptr<DistanceProvider> precomputed_from_graph(const graph::CsrGraph<MemSpace>& g,
                                                         const dist::Comm& comm) {
  const auto own = plan_rows(g.n, comm.size(), comm.rank());
  return std::make_unique<PrecomputedDistances>(
      g.n, graph::shortest_path_rows<float>(g, own.begin, own.end), comm);
}

std::unique_ptr<DistanceProvider> precomputed_from_file(const std::string& path,
                                                        const std::string& dataset,
                                                        const dist::Comm& comm) {
  std::int64_t n = 0;
  std::vector<float> values;
  dist::Block own{0, 0};
  comm.phase([&] {
    const auto file = io::h5::File::open_read(path);
    require(file.is_dataset(dataset), path, dataset, "no such dataset (expected an n×n distance matrix)");
    const auto shape = file.shape(dataset);
    require(shape.size() == 2 && shape[0] == shape[1], path, dataset,
            "a precomputed distance matrix must be square, this one is " +
                (shape.size() == 2 ? std::to_string(shape[0]) + " × " + std::to_string(shape[1])
                                   : std::to_string(shape.size()) + "-D"));
    n = shape[0];
    require(n > 0, path, dataset, "the distance matrix is empty");
    own = plan_rows(n, comm.size(), comm.rank());
    values = own.end > own.begin ? file.read_row_range<float>(dataset, own.begin, own.end)
                                 : std::vector<float>();
    validate_rows(values, own.begin, n, path, dataset);
  });
  return std::make_unique<PrecomputedDistances>(n, upload(values, own.end - own.begin, n), comm);
}

std::unique_ptr<DistanceProvider> precomputed_from_matrix(std::int64_t n,
                                                          const std::vector<float>& values,
                                                          const std::string& source,
                                                          const dist::Comm& comm) {
  const auto own = plan_rows(n, comm.size(), comm.rank());
  std::vector<float> mine;
  comm.phase([&] {
    require(n > 0 && static_cast<std::int64_t>(values.size()) == n * n, source, "",
            "a precomputed distance matrix must be square and non-empty");
    mine.assign(values.begin() + own.begin * n, values.begin() + own.end * n);
    validate_rows(mine, own.begin, n, source, "");
  });
  return std::make_unique<PrecomputedDistances>(n, upload(mine, own.end - own.begin, n), comm);
}

std::unique_ptr<DistanceProvider> dijkstra_provider(const graph::CsrGraph<MemSpace>& g,
                                                    std::int64_t cache_rows,
                                                    const dist::Comm& comm) {
  return std::make_unique<DijkstraDistances>(g, cache_rows, comm);
}

DistanceProviders landmark_providers(const graph::CsrGraph<MemSpace>& source,
                                     const graph::CsrGraph<MemSpace>& target, std::int64_t landmarks,
                                     const dist::Comm& comm) {
  // Checked on every rank: only the builders look for landmarks.
  require(landmarks >= 1, "", "landmarks",
          "the number of landmarks must be at least 1, got " + std::to_string(landmarks));
  const int source_builder = 0, target_builder = comm.size() / 2;
  Embedding zs = embedding_memory(source, landmarks, comm.spans_world());
  Embedding zt = embedding_memory(target, landmarks, comm.spans_world());
  comm.phase([&] {
    if (comm.rank() == source_builder) build_embedding(source, zs.z);
    if (comm.rank() == target_builder) build_embedding(target, zt.z);
  });
  broadcast_embedding(comm, zs.z, source_builder);
  broadcast_embedding(comm, zt.z, target_builder);
  return {std::make_unique<LandmarkDistances>(std::move(zs)), std::make_unique<LandmarkDistances>(std::move(zt))};
}

}  // namespace kotml::gw
