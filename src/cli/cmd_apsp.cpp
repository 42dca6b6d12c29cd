// kotml apsp INPUT -o OUT.h5: shortest-path lengths on a graph from every node
// (or from farthest-point landmarks), sources split over MPI ranks and Kokkos
// teams, written into /distances by every rank in place (or through rank 0).

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kotml/core/atomic_file.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/json_text.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/phase_timers.hpp"
#include "kotml/core/simulation.hpp"
#include "kotml/graph/apsp.hpp"
#include "kotml/graph/components.hpp"
#include "kotml/graph/graph_file.hpp"
#include "kotml/graph/knn_graph.hpp"
#include "kotml/graph/landmarks.hpp"
#include "kotml/graph/point_cloud.hpp"
#include "options.hpp"
#include "subcommand.hpp"

namespace kotml::cli {

namespace {

/// Infinite lengths are written as they are (scipy's convention for pairs not
/// connected), but never silently: the warning says which cause it is.
void warn_infinite_lengths(const graph::CsrGraph<MemSpace>& g, std::int64_t infinite, std::int64_t rows,
                           graph::Precision precision) {
  const auto components = graph::connected_components(g).count;
  std::ostringstream why;
  why << "apsp: " << infinite << " of " << rows * g.n << " lengths are infinite: ";
  if (components > 1)
    why << "the graph has " << components << " connected components, and pairs in different ones are not connected";
  else
    why << "the graph is connected, so these lengths overflow "
        << (precision == graph::Precision::float32 ? "float32 (use --precision float64)" : "float64 (rescale the input)");
  log::warn(why.str());
}

}  // namespace

Subcommand apsp_subcommand() {
  Subcommand sub;
  sub.name = "apsp";
  sub.summary = "all-pairs (or landmark) shortest paths on a graph or a cloud's kNN graph";
  sub.usage =
      "kotml apsp INPUT(graph .h5 | cloud .h5/.h5ad) -o OUT.h5 [--precision float32] "
      "[--landmarks L] [--k 30]";
  sub.example = "kotml apsp cells.h5ad --use-rep X_pca -o paths.h5 --landmarks 500";
  sub.declare = [](OptionGroups& groups, po::positional_options_description& positional) {
    groups.input.add_options()
        ("input", po::value<std::string>()->required(),
         "a graph file written by kotml knn-graph (or any CSR group, see --group), or a point "
         "cloud (.h5ad, or HDF5 with --dataset) whose kNN graph is built first")
        ("group", po::value<std::string>()->default_value("graph"), "graph group in a graph input")
        ("use-rep", po::value<std::string>()->default_value(""),
         "AnnData representation for a cloud input: X (default) or an obsm key")
        ("dataset", po::value<std::string>()->default_value("x"),
         "dataset holding the points in a plain HDF5 cloud input");
    groups.model.add_options()
        ("landmarks", po::value<std::int64_t>()->default_value(0),
         "if > 0: only rows for this many farthest-point landmarks instead of every node")
        ("landmark-start", po::value<std::int64_t>()->default_value(0),
         "node the farthest-point sampling starts from")
        ("k", po::value<int>()->default_value(30), "neighbours per point for a cloud input");
    groups.parallel.add_options()
        ("chunk-rows", po::value<std::int64_t>()->default_value(256),
         "rows each rank computes and writes at a time (bounds memory)")
        ("writers", po::value<std::string>()->default_value("ranks"),
         "ranks: every rank writes its own rows into OUT in place (where every rank can open "
         "it, as on a shared file system; otherwise rank 0 writes them); root: rank 0 gathers "
         "and writes every row");
    groups.output.add_options()
        ("output,o", po::value<std::string>()->required(), "HDF5 file for /distances and /sources")
        ("precision", po::value<std::string>()->default_value("float32"),
         "float32 or float64 for /distances (paths are summed in float64 either way)");
    declare_timers_option(groups.output);
    positional.add("input", 1);
  };
  sub.run = [](const po::variables_map& vm, const dist::Comm& comm) {
    const auto input = option<std::string>(vm, "input");
    const auto output = option<std::string>(vm, "output");
    const auto group = option<std::string>(vm, "group");
    graph::ApspOptions options;
    options.precision = graph::parse_precision(option<std::string>(vm, "precision"), "precision");
    options.chunk_rows = positive<std::int64_t>(vm, "chunk-rows");
    const auto writers = option<std::string>(vm, "writers");
    if (writers != "ranks" && writers != "root")
      throw Error::option("writers", "must be ranks or root, got '" + writers + "'");
    options.every_rank_writes = writers == "ranks";
    const auto n_landmarks = non_negative<std::int64_t>(vm, "landmarks");
    const auto landmark_start = non_negative<std::int64_t>(vm, "landmark-start");
    const std::string timers_json = option<std::string>(vm, "timers");
    check_outputs(comm, {input}, {{"output", output}, {"timers", timers_json}});

    // Every rank holds the graph: each source's Dijkstra needs all of it. A
    // graph input is read whole by every rank; a cloud's points are read in
    // blocks, one a rank, and allgathered (the kNN search needs them all).
    bool from_graph = false;
    graph::PointCloud cloud;
    Matrix<double> points;
    std::vector<std::shared_ptr<void>> shared_points;  // a folded simulation's (sim::shared_copy)
    graph::CsrGraph<MemSpace> g;
    std::optional<timers::Scope> timed(std::in_place, "read");
    comm.phase([&] {
      // A --group given by the user means a graph input: its absence is named
      // as such, not as a missing point dataset.
      const bool group_given = !vm["group"].defaulted();
      from_graph = !graph::is_anndata_file(input) &&
                   (group_given || graph::has_graph(io::h5::File::open_read(input), group));
      if (from_graph) g = graph::read_graph(io::h5::File::open_read(input), group);
    });
    if (!from_graph) {
      cloud = graph::read_point_cloud(comm, input, option<std::string>(vm, "dataset"), option<std::string>(vm, "use-rep"));
      // Only the kNN search reads the points, on the device: the host copy goes.
      points = sim::shared_copy("kotml::apsp::points", cloud.to_device(), comm.spans_world(), shared_points);
      std::vector<double>().swap(cloud.values);
    }
    timed.emplace("kNN graph");
    if (!from_graph) {
      g = graph::build_knn_graph(points, option<int>(vm, "k"), comm, cloud.source);
      points = Matrix<double>();
      shared_points.clear();
    }

    // One order for every Dijkstra of the run: the landmarks' and the rows'.
    timed.emplace("node order");
    const graph::LocalityOrderedGraph ordered = graph::locality_ordered(g, comm.spans_world());

    // Choosing the landmarks computes their rows (every rank, all of them):
    // those rows are the output, so the writer copies them, not Dijkstra again.
    timed.emplace("sources");
    std::vector<graph::NodeId> sources;
    graph::Landmarks landmarks;
    comm.phase([&] {
      if (n_landmarks > 0) {
        require(landmark_start < g.n, "", "--landmark-start",
                "node " + std::to_string(landmark_start) + " is not in the " +
                    std::to_string(g.n) + "-node graph");
        landmarks = graph::farthest_point_landmarks(ordered, n_landmarks,
                                                    static_cast<graph::NodeId>(landmark_start));
        sources = landmarks.nodes;
      } else {
        for (std::int64_t v = 0; v < g.n; ++v) sources.push_back(static_cast<graph::NodeId>(v));
      }
    });

    timed.emplace("shortest paths");
    Kokkos::Timer timer;
    std::optional<AtomicFile> out;
    std::optional<io::h5::File> file;
    comm.phase([&] {
      if (!comm.is_root()) return;
      out.emplace(output);
      file.emplace(io::h5::File::create(*out));
    });
    io::h5::File* const root_file = file ? &*file : nullptr;
    const graph::ApspWritten written =
        n_landmarks > 0 ? graph::write_shortest_paths(landmarks, options, comm, root_file, "distances")
                        : graph::write_shortest_paths(ordered, sources, options, comm, root_file, "distances");
    comm.phase([&] {
      if (!comm.is_root()) return;
      file->write<std::int64_t>("sources", std::vector<std::int64_t>(sources.begin(), sources.end()));
      const nlohmann::json config = {
          {"command", "apsp"},
          {"input", input},
          {"graph_from", from_graph ? input + ":" + group : "kNN graph of " + cloud.source},
          {"nodes", g.n},
          {"precision", option<std::string>(vm, "precision")},
          {"landmarks", n_landmarks},
          {"landmark-start", landmark_start},
          {"k", from_graph ? 0 : option<int>(vm, "k")},
          {"chunk-rows", options.chunk_rows},
          {"writers", written.every_rank_wrote ? "ranks" : "root"},
          {"ranks", comm.size()}};
      file->write_string_attribute("/", "kotml_config", json_text(config));
      file->close();
      out->commit();
    });
    timed.reset();
    if (written.infinite > 0 && comm.is_root())
      warn_infinite_lengths(g, written.infinite, static_cast<std::int64_t>(sources.size()), options.precision);
    log::out() << "apsp: " << sources.size() << " x " << g.n << " shortest-path lengths ("
               << option<std::string>(vm, "precision") << ", " << comm.size() << " rank"
               << (comm.size() == 1 ? "" : "s") << ") in " << timer.seconds()
               << " s (Dijkstra and writing) -> " << output << ":/distances\n";
    report_timers(comm, "apsp", timers_json);
    return exit_ok;
  };
  return sub;
}

}  // namespace kotml::cli
