// kotml gw: sampled Gromov-Wasserstein between two point clouds (TorchGW's
// sampled_gw), plan rows split over MPI ranks. Writes /match, /gw_cost,
// /iterations, /err_list, /cost_list and, on request, /plan and (--paired)
// /foscttm.

#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kotml/core/atomic_file.hpp"
#include "double_option.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/json_text.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/phase_timers.hpp"
#include "kotml/graph/knn_graph.hpp"
#include "kotml/graph/point_cloud.hpp"
#include "kotml/gw/distances.hpp"
#include "kotml/gw/plan_output.hpp"
#include "kotml/gw/quality.hpp"
#include "kotml/gw/sampled_gw.hpp"
#include "kotml/io/hdf5.hpp"
#include "options.hpp"
#include "subcommand.hpp"

namespace kotml::cli {
namespace {

std::string fixed_text(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

struct Side {
  std::string file;     // where the cloud (and its weights) live
  std::string dataset;  // plain-HDF5 dataset of the cloud
  std::string dist;     // precomputed distance dataset (precomputed mode, single input)
  std::string weights;  // optional marginal dataset
  graph::PointCloud cloud;
  std::vector<double> marginal;
  bool given_distances = false;
};

std::vector<double> read_weights(const std::string& path, const std::string& dataset) {
  if (dataset.empty()) return {};
  const auto file = io::h5::File::open_read(path);
  require(file.is_dataset(dataset), path, dataset, "no such dataset (weights of the points)");
  return file.read<double>(dataset);
}

std::string given_or_cloud(const Side& side) {
  return side.given_distances ? side.file + ":" + side.dist : side.cloud.source;
}

/// Both clouds' distances: from the given matrices, or from kNN graphs of the
/// points. Collective.
gw::DistanceProviders providers_for(const Side& source, const Side& target, gw::DistanceMode mode, int k,
                                    std::int64_t landmarks, std::int64_t cache_rows, const dist::Comm& comm) {
  const auto knn_graph = [&](const Side& side) {
    return graph::build_knn_graph(side.cloud.to_device(), k, comm, side.cloud.source);
  };
  if (mode == gw::DistanceMode::landmark) {  // the two embeddings are built at once
    const auto source_graph = knn_graph(source);
    const auto target_graph = knn_graph(target);
    return gw::landmark_providers(source_graph, target_graph, landmarks, comm);
  }
  const auto one = [&](const Side& side) -> std::unique_ptr<gw::DistanceProvider> {
    if (side.given_distances) return gw::precomputed_from_file(side.file, side.dist, comm);
    if (mode == gw::DistanceMode::precomputed) return gw::precomputed_from_graph(knn_graph(side), comm);
    return gw::dijkstra_provider(knn_graph(side), cache_rows, comm);
  };
  gw::DistanceProviders both;
  both.source = one(source);
  both.target = one(target);
  return both;
}

}  // namespace

Subcommand gw_subcommand() {
  Subcommand sub;
  sub.name = "gw";
  sub.summary = "sampled Gromov-Wasserstein matching between two point clouds (TorchGW)";
  sub.usage =
      "kotml gw PAIR.h5 (/x, /y) | SOURCE TARGET (.h5ad with --use-rep, or .h5) -o OUT.h5 "
      "[--mode dijkstra|precomputed|landmark] [--M 50] [--epsilon 1e-3] [--plan dense|topk]";
  sub.example = "kotml gw rna.h5ad atac.h5ad --use-rep X -o gw.h5 --plan topk";
  sub.declare = [](OptionGroups& groups, po::positional_options_description& positional) {
    groups.input.add_options()
        ("input", po::value<std::string>()->required(),
         "source cloud file; alone, an HDF5 file holding both clouds (--source-dataset, "
         "--target-dataset) or, in precomputed mode, both distance matrices (--dist-source, "
         "--dist-target)")
        ("target", po::value<std::string>()->default_value(""), "target cloud file (optional)")
        ("use-rep", po::value<std::string>()->default_value(""),
         "AnnData representation: X (default) or an obsm key such as X_pca")
        ("source-dataset", po::value<std::string>()->default_value("x"), "source points in a plain HDF5 input")
        ("target-dataset", po::value<std::string>()->default_value("y"),
         "target points in a plain HDF5 input (with one input file; with two, --source-dataset "
         "names the points in both)")
        ("dist-source", po::value<std::string>()->default_value("dist_x"),
         "precomputed mode: source distance matrix in the single input, used when present")
        ("dist-target", po::value<std::string>()->default_value("dist_y"),
         "precomputed mode: target distance matrix in the single input")
        ("source-weights", po::value<std::string>()->default_value(""), "dataset of source marginal p (default uniform)")
        ("target-weights", po::value<std::string>()->default_value(""), "dataset of target marginal q (default uniform)");
    groups.model.add_options()
        ("mode", po::value<std::string>()->default_value("dijkstra"),
         "intra-cloud distances: precomputed (all pairs), dijkstra (per anchor, cached), landmark")
        ("k", po::value<int>()->default_value(30), "neighbours of the kNN graphs")
        ("landmarks", po::value<std::int64_t>()->default_value(50), "landmarks (landmark mode)")
        ("M", po::value<std::int64_t>()->default_value(50), "anchor pairs sampled per iteration")
        ("s-shared", po::value<std::int64_t>()->default_value(0), "shared mass in points (0: min(N, K))")
        ("semi-relaxed", po::bool_switch(), "relax the target marginal (KL weight --rho)")
        ("rho", kotml::double_option(1.0), "KL weight of the relaxed target marginal")
        ("seed", po::value<std::uint64_t>()->default_value(0), "seed of the anchor sampling");
    groups.solver.add_options()
        ("alpha", kotml::double_option(0.9), "momentum: weight of the new plan")
        ("max-iter", po::value<int>()->default_value(500), "outer iterations at most")
        ("tol", kotml::double_option(1e-5), "stop when ||T_t - T_t-1||_F is below")
        ("epsilon", kotml::double_option(1e-3), "initial entropic regularisation (decays <= 10x)")
        ("min-iter", po::value<int>()->default_value(50), "iterations before the stopping rules apply")
        ("mixed-precision", po::bool_switch(), "float32 plan, cost and Sinkhorn")
        ("sinkhorn-max-iter", po::value<int>()->default_value(100), "Sinkhorn iterations per step at most")
        ("sinkhorn-tol", kotml::double_option(5e-4), "Sinkhorn tolerance on max |P1 - a|")
        ("sinkhorn-check-every", po::value<int>()->default_value(1),
         "check the Sinkhorn tolerance every this many iterations (TorchGW: 10)");
    groups.parallel.add_options()
        ("cache-rows", po::value<std::int64_t>()->default_value(2000), "Dijkstra rows cached per cloud (dijkstra mode)");
    groups.output.add_options()
        ("output,o", po::value<std::string>()->required(), "HDF5 file for the results")
        ("plan", po::value<std::string>()->default_value("none"), "write the plan: none, dense or topk")
        ("plan-topk", po::value<std::int64_t>()->default_value(10), "entries per row kept by --plan topk")
        ("plan-precision", po::value<std::string>()->default_value("float64"), "float32 or float64 for a dense /plan")
        ("paired", po::bool_switch(),
         "source point i and target point i are the same cell (e.g. SNARE-seq RNA and ATAC): report FOSCTTM "
         "(0 perfect, 0.5 chance) of the plan's barycentric projections, in the target's coordinates, as /foscttm");
    declare_timers_option(groups.output);
    positional.add("input", 1).add("target", 1);
  };
  sub.run = [](const po::variables_map& vm, const dist::Comm& comm) {
    Kokkos::Timer total_timer;
    gw::SampledGwOptions o;
    const auto mode = gw::parse_distance_mode(option<std::string>(vm, "mode"), "mode");
    o.samples = option<std::int64_t>(vm, "M");
    o.alpha = option<double>(vm, "alpha");
    o.max_iter = option<int>(vm, "max-iter");
    o.tol = option<double>(vm, "tol");
    o.epsilon = option<double>(vm, "epsilon");
    o.min_iter_before_converge = option<int>(vm, "min-iter");
    o.s_shared = option<std::int64_t>(vm, "s-shared");
    o.semi_relaxed = option<bool>(vm, "semi-relaxed");
    o.rho = option<double>(vm, "rho");
    o.mixed_precision = option<bool>(vm, "mixed-precision");
    o.seed = option<std::uint64_t>(vm, "seed");
    o.sinkhorn_max_iter = option<int>(vm, "sinkhorn-max-iter");
    o.sinkhorn_tol = option<double>(vm, "sinkhorn-tol");
    o.sinkhorn_check_every = option<int>(vm, "sinkhorn-check-every");
    o.validate();
    const int k = positive<int>(vm, "k");
    const auto landmarks = positive<std::int64_t>(vm, "landmarks");
    const auto cache_rows = positive<std::int64_t>(vm, "cache-rows");
    const auto plan_kind = one_of(vm, "plan", {"none", "dense", "topk"});
    const auto plan_topk = positive<std::int64_t>(vm, "plan-topk");
    const auto plan_precision = one_of(vm, "plan-precision", {"float32", "float64"});
    const auto output = option<std::string>(vm, "output");
    const auto use_rep = option<std::string>(vm, "use-rep");
    const bool paired = option<bool>(vm, "paired");

    Side source, target;
    source.file = option<std::string>(vm, "input");
    const auto second = option<std::string>(vm, "target");
    target.file = second.empty() ? source.file : second;
    source.dataset = option<std::string>(vm, "source-dataset");
    target.dataset = second.empty() ? option<std::string>(vm, "target-dataset") : source.dataset;
    source.dist = option<std::string>(vm, "dist-source");
    target.dist = option<std::string>(vm, "dist-target");
    source.weights = option<std::string>(vm, "source-weights");
    target.weights = option<std::string>(vm, "target-weights");
    const std::string timers_json = option<std::string>(vm, "timers");
    check_outputs(comm, {source.file, target.file}, {{"output", output}, {"timers", timers_json}});

    std::optional<timers::Scope> timed(std::in_place, "read");
    comm.phase([&] {
      if (mode == gw::DistanceMode::precomputed && second.empty() &&
          !graph::is_anndata_file(source.file)) {
        const auto file = io::h5::File::open_read(source.file);
        source.given_distances = file.is_dataset(source.dist);
        target.given_distances = file.is_dataset(target.dist);
        require(source.given_distances == target.given_distances, source.file,
                source.given_distances ? target.dist : source.dist,
                "precomputed mode needs both distance matrices or neither (then kNN graphs of "
                "the clouds are used)");
      }
    });
    // Collective: each rank reads its block of a cloud's points.
    for (Side* side : {&source, &target})
      if (!side->given_distances) side->cloud = graph::read_point_cloud(comm, side->file, side->dataset, use_rep);
    comm.phase([&] {
      for (Side* side : {&source, &target}) side->marginal = read_weights(side->file, side->weights);
      if (paired) {
        require(!target.given_distances, target.file, target.dist,
                "--paired projects onto the target's points, but the target is given as distances only");
        if (!source.given_distances && source.cloud.n != target.cloud.n)
          throw Error::option("paired", "source point i must be target point i, but the clouds have " +
                                            std::to_string(source.cloud.n) + " and " +
                                            std::to_string(target.cloud.n) + " points");
      }
    });

    timed.emplace("graphs and distances");
    Kokkos::Timer phase_timer;
    const auto distances = providers_for(source, target, mode, k, landmarks, cache_rows, comm);
    const double setup_seconds = phase_timer.seconds();
    // The points are needed again only for FOSCTTM's projections onto the target.
    for (Side* side : {&source, &target})
      if (!paired || side == &source) side->cloud = graph::PointCloud{side->cloud.source, 0, 0, {}};
    o.keep_plan = plan_kind != "none" || paired;
    timed.emplace("solve");
    const auto result = gw::sampled_gw(*distances.source, *distances.target, o, comm,
                                       source.marginal, target.marginal);
    const double solve_seconds = total_timer.seconds() - setup_seconds;
    timed.reset();  // gw::foscttm is its own phase
    const std::optional<double> foscttm =
        paired ? std::optional<double>(gw::foscttm(comm, result.plan, result.row_begin, result.n_source,
                                                   target.cloud.to_device()))
               : std::nullopt;

    timed.emplace("write");
    std::optional<AtomicFile> out;
    std::optional<io::h5::File> file;
    comm.phase([&] {
      if (!comm.is_root()) return;
      out.emplace(output);
      file.emplace(io::h5::File::create(*out));
      file->write<std::int64_t>("match", result.match);
      file->write<double>("gw_cost", {result.gw_cost}, {});
      file->write<std::int64_t>("iterations", {result.iterations}, {});
      file->write<double>("err_list", result.err_list);
      file->write<double>("cost_list", result.cost_list);
      if (foscttm) file->write<double>("foscttm", {*foscttm}, {});
      nlohmann::json config = {
          {"command", "gw"},
          {"source", given_or_cloud(source)},
          {"target", given_or_cloud(target)},
          {"n_source", result.n_source},
          {"n_target", result.n_target},
          {"mode", gw::to_string(mode)},
          {"k", k},
          {"landmarks", landmarks},
          {"cache-rows", cache_rows},
          {"M", o.samples},
          {"alpha", o.alpha},
          {"max-iter", o.max_iter},
          {"tol", o.tol},
          {"epsilon", o.epsilon},
          {"min-iter", o.min_iter_before_converge},
          {"s-shared", o.s_shared},
          {"semi-relaxed", o.semi_relaxed},
          {"rho", o.rho},
          {"mixed-precision", o.mixed_precision},
          {"seed", o.seed},
          {"sinkhorn-max-iter", o.sinkhorn_max_iter},
          {"sinkhorn-tol", o.sinkhorn_tol},
          {"sinkhorn-check-every", o.sinkhorn_check_every},
          {"plan", plan_kind},
          {"ranks", comm.size()},
          {"sinkhorn_iterations", result.sinkhorn_iterations},
          {"final_epsilon", result.final_epsilon},
          {"seconds_setup", setup_seconds},
          {"seconds_solve", solve_seconds}};
      config["paired"] = paired;
      if (foscttm) config["foscttm"] = *foscttm;
      file->write_string_attribute("/", "kotml_config", json_text(config));
    });
    if (plan_kind == "dense")
      gw::write_dense_plan(result, plan_precision == "float32", comm, file ? &*file : nullptr, "plan");
    else if (plan_kind == "topk")
      gw::write_top_k_plan(result, plan_topk, comm, file ? &*file : nullptr, "plan");
    comm.phase([&] {
      if (!comm.is_root()) return;
      file->close();
      out->commit();
    });
    timed.reset();
    log::out() << "gw: " << result.n_source << " x " << result.n_target << " (" << gw::to_string(mode)
               << "), " << result.iterations << " iterations, gw_cost " << result.gw_cost
               << (foscttm ? ", FOSCTTM " + fixed_text(*foscttm, 4) : std::string())
               << ", setup " << setup_seconds << " s, solve " << solve_seconds << " s -> " << output << "\n";
    report_timers(comm, "gw", timers_json);
    return exit_ok;
  };
  return sub;
}

}  // namespace kotml::cli
