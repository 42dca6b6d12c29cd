// kotml knn-graph INPUT -o OUT.h5: the connected kNN graph of a point cloud, as
// TorchGW builds it (exact Euclidean kNN, union-symmetrised, components bridged
// by their closest pair), written as a CSR group readable by scipy and anndata.

#include <nlohmann/json.hpp>

#include <string>

#include "kotml/core/atomic_file.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/json_text.hpp"
#include "kotml/core/log.hpp"
#include "kotml/graph/graph_file.hpp"
#include "kotml/graph/knn_graph.hpp"
#include "kotml/graph/point_cloud.hpp"
#include "options.hpp"
#include "subcommand.hpp"

namespace kotml::cli {

Subcommand knn_graph_subcommand() {
  Subcommand sub;
  sub.name = "knn-graph";
  sub.summary = "connected k-nearest-neighbour graph of a point cloud (TorchGW's construction)";
  sub.usage = "kotml knn-graph INPUT(.h5 with /x | .h5ad) -o OUT.h5 [--k 30] [--use-rep X_pca]";
  sub.example = "kotml knn-graph cells.h5ad --use-rep X_pca -o graph.h5 --k 30";
  sub.declare = [](OptionGroups& groups, po::positional_options_description& positional) {
    groups.input.add_options()
        ("input", po::value<std::string>()->required(),
         "point cloud: an .h5ad file, or an HDF5 file with a 2-D dataset (see --dataset)")
        ("use-rep", po::value<std::string>()->default_value(""),
         "AnnData representation: X (default) or an obsm key such as X_pca")
        ("dataset", po::value<std::string>()->default_value("x"),
         "dataset holding the points in a plain HDF5 input");
    groups.model.add_options()
        ("k", po::value<int>()->default_value(30), "neighbours per point (TorchGW's default)");
    groups.output.add_options()
        ("output,o", po::value<std::string>()->required(), "HDF5 file to write the graph to")
        ("group", po::value<std::string>()->default_value("graph"), "group to write the graph to");
    positional.add("input", 1);
  };
  sub.run = [](const po::variables_map& vm, const dist::Comm& comm) {
    const auto input = option<std::string>(vm, "input");
    const auto output = option<std::string>(vm, "output");
    const auto group = option<std::string>(vm, "group");
    const int k = option<int>(vm, "k");
    check_outputs(comm, {input}, {{"output", output}});
    const graph::PointCloud cloud =
        graph::read_point_cloud(comm, input, option<std::string>(vm, "dataset"), option<std::string>(vm, "use-rep"));
    graph::KnnGraphReport report;
    const auto g = graph::build_knn_graph(cloud.to_device(), k, comm, cloud.source, &report);
    std::int64_t edges = 0;
    comm.phase([&] {
      if (!comm.is_root()) return;
      edges = g.num_directed_edges() / 2;
      AtomicFile out(output);
      {
        auto file = io::h5::File::create(out);
        graph::write_graph(file, group, g);
        file.write_numeric_attribute<std::int64_t>(group, "k", {k}, true);
        file.write_numeric_attribute<std::int64_t>(group, "components_before_bridging",
                                                   {report.components_before_bridging}, true);
        file.write_numeric_attribute<std::int64_t>(group, "bridges_added", {report.bridges_added},
                                                   true);
        file.write_numeric_attribute<double>(group, "longest_bridge", {report.longest_bridge}, true);
        const nlohmann::json config = {{"command", "knn-graph"},
                                       {"input", input},
                                       {"source", cloud.source},
                                       {"k", k},
                                       {"use-rep", option<std::string>(vm, "use-rep")},
                                       {"dataset", option<std::string>(vm, "dataset")},
                                       {"group", group}};
        file.write_string_attribute("/", "kotml_config", json_text(config));
        file.close();
      }
      out.commit();
    });
    log::out() << "knn-graph: " << cloud.n << " nodes, " << edges << " edges (k=" << k << "), "
               << report.components_before_bridging << " component"
               << (report.components_before_bridging == 1 ? "" : "s") << " before bridging, "
               << report.bridges_added << " bridge" << (report.bridges_added == 1 ? "" : "s")
               << " added -> " << output << ":/" << group << "\n";
    return exit_ok;
  };
  return sub;
}

}  // namespace kotml::cli
