// kotml ot: one optimal-transport problem between two point sets, from /x, /y
// (and optional weights /a, /b) of an HDF5 file or from two .h5ad files, solved
// exactly (network simplex, on rank 0) or entropically (the tiled Sinkhorn of
// ot/tiled_sinkhorn.hpp, OTT-JAX semantics, with the rows of x spread over the
// ranks and each rank reading only its rows). One JSON line on stdout; the
// potentials (-o) and, for small problems, the plan (--plan) go to HDF5 files.

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "kotml/core/atomic_file.hpp"
#include "double_option.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/json_text.hpp"
#include "kotml/core/phase_timers.hpp"
#include "kotml/core/progress.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/narrowing.hpp"
#include "kotml/core/types.hpp"
#include "kotml/core/version.hpp"
#include "kotml/dist/exact_sum.hpp"
#include "kotml/io/anndata.hpp"
#include "kotml/io/hdf5.hpp"
#include "kotml/ot/cost.hpp"
#include "kotml/ot/network_simplex.hpp"
#include "kotml/ot/tiled_sinkhorn.hpp"
#include "options.hpp"
#include "ot_input.hpp"
#include "sinkhorn_options.hpp"
#include "subcommand.hpp"

namespace kotml::cli {
namespace {

/// The largest plan --plan writes (n·m entries): 1 GiB of doubles.
constexpr std::int64_t largest_written_plan = std::int64_t(1) << 27;

// ------------------------------------------------------------------ input

template <class T>
Problem<T> read_problem(const po::variables_map& vm, bool distributed, const dist::Comm& comm) {
  Problem<T> p;
  const bool from_h5ad = has(vm, "source") || has(vm, "target");
  if (from_h5ad) {
    if (has(vm, "input")) throw Error::option("input", "give either --input or --source and --target, not both");
    if (!has(vm, "source") || !has(vm, "target"))
      throw Error::option(has(vm, "source") ? "target" : "source", "is needed with the other .h5ad side");
    if (has(vm, "use-rep") && has(vm, "layer")) throw Error::option("use-rep", "give --use-rep or --layer, not both");
    const std::string element = has(vm, "use-rep")  ? "obsm/" + option<std::string>(vm, "use-rep")
                                : has(vm, "layer") ? "layers/" + option<std::string>(vm, "layer")
                                                   : "X";
    p.inputs = {option<std::string>(vm, "source"), option<std::string>(vm, "target")};
    p.x = read_h5ad_side<T>(p.inputs[0], element, !distributed, comm);
    p.y = read_h5ad_side<T>(p.inputs[1], element, true, comm);
  } else {
    if (!has(vm, "input")) throw Error::option("input", "is needed (or --source and --target .h5ad files)");
    if (has(vm, "use-rep") || has(vm, "layer"))
      throw Error::option(has(vm, "use-rep") ? "use-rep" : "layer", "applies to --source/--target .h5ad inputs");
    const std::string path = option<std::string>(vm, "input");
    p.inputs = {path};
    io::h5::verify_readable(path);
    const auto file = io::h5::File::open_read(path);
    p.x = read_hdf5_side<T>(file, "/x", "/a", !distributed, comm);
    p.y = read_hdf5_side<T>(file, "/y", "/b", true, comm);
  }
  check_same_dimension(p);
  return p;
}

// ------------------------------------------------------------- Sinkhorn

/// A side's points and weights on the device. The host points are released
/// as soon as they are copied, so that a rank holds the two copies of one
/// side at most.
template <class T>
struct DeviceSide {
  Matrix<T> points;
  Vector<double> weights;

  explicit DeviceSide(Side<T>& s)
      : points(no_init("kotml::ot_cli::points"), s.count, s.dim), weights(no_init("kotml::ot_cli::weights"), s.count) {
    Kokkos::deep_copy(points, HostMatrix<const T>(s.points.data(), s.count, s.dim));
    std::vector<T>().swap(s.points);
    Kokkos::deep_copy(weights, HostVector<const double>(s.weights.data(), s.weights.size()));
  }
  ot::TiledPoints<T> view() const { return {points, weights, {}}; }
};

/// Writes the potentials, errors and settings (rank 0; f gathered in row order).
void write_potentials(const std::string& path, const std::vector<double>& f, const std::vector<double>& g,
                      const ot::TiledSinkhornReport& report, const nlohmann::ordered_json& summary) {
  AtomicFile out(path);
  {
    auto file = io::h5::File::create(out);
    file.write("/f", f);
    file.write("/g", g);
    file.write("/errors", report.errors);
    file.write("/iterations", std::vector<std::int64_t>{report.iterations});
    file.write_string_attribute("/", "configuration", json_text(summary));
    file.write_string_attribute("/", "kotml_version", std::string(kotml::version_string) + " (git " + kotml::git_hash + ")");
    file.write_string_attribute("/", "convention", "T_ij = exp((f_i + g_j - c_ij) / epsilon) (OTT-JAX)");
    file.write_numeric_attribute("/", "epsilon", std::vector<double>{report.epsilon}, true);
    file.close();
  }
  out.commit();
}

template <class T>
int solve_sinkhorn(const po::variables_map& vm, const dist::Comm& comm, const ot::TiledSinkhornOptions& options,
                   ot::Cost cost_kind, const std::string& out_path, const std::string& plan_path, bool pretty) {
  Problem<T> p;
  std::optional<timers::Scope> timed(std::in_place, "read");
  comm.phase([&] { p = read_problem<T>(vm, true, comm); });
  comm.phase([&] { settle_weights(p, options.balanced() ? WeightMass::normalised : WeightMass::kept, comm); });
  if (std::is_same<T, float>::value)
    comm.phase([&] {
      for (const Side<T>* s : {&p.x, &p.y})
        require_float32_range(s->narrowed, s->file, s->element, "use --precision double, or rescale the points");
    });
  if (!plan_path.empty() && p.x.total * p.y.total > largest_written_plan)
    throw Error::option("plan", "the plan would have " + std::to_string(p.x.total * p.y.total) +
                                    " entries; --plan writes plans of up to " + std::to_string(largest_written_plan) +
                                    " (use -o for the potentials, from which any part of the plan follows)");
  timed.emplace("stage");
  const DeviceSide<T> dx(p.x);
  std::optional<DeviceSide<T>> dy(std::in_place, p.y);
  ot::PointCost cost;
  cost.kind = cost_kind;
  const ot::RowBlock rows{p.x.total, p.x.begin, p.x.count};
  timed.emplace("solve");
  ot::TiledSinkhorn<T> solver(comm, rows, dx.view(), dy->view(), cost, options);
  dy.reset();  // the solver keeps its own packed copy of y, and needs no other
  const auto report = solver.solve();
  timed.emplace("marginals");
  if (report.status == ot::SolveStatus::numerical_error)
    throw Error("", "sinkhorn", "the iterations produced non-finite potentials (epsilon " +
                                    log::number_text(report.epsilon) +
                                    " is too small for the costs, or the marginals cannot be matched); nothing written");

  // The plan's marginals, cost and mass from tiled passes.
  const std::vector<std::int32_t> one_row_group(static_cast<std::size_t>(p.x.count), 0),
      one_col_group(static_cast<std::size_t>(p.y.count), 0);
  const auto blocks = solver.block_sums(one_row_group, 1, one_col_group, 1);
  const auto column_mass = solver.transpose_apply(std::vector<double>(static_cast<std::size_t>(p.x.count), 1.0),
                                                  one_row_group, 1);
  const auto row_mass = solver.apply(std::vector<double>(static_cast<std::size_t>(p.y.count), 1.0), one_col_group, 1);
  dist::ExactSum row_error(1);
  for (std::size_t i = 0; i < row_mass.size(); ++i) row_error.add(0, std::fabs(row_mass[i] - p.x.weights[i]));
  double col_error = 0;
  for (std::size_t j = 0; j < column_mass.size(); ++j) col_error += std::fabs(column_mass[j] - p.y.weights[j]);
  const double marginal_error = row_error.allreduce(comm)[0] + col_error;

  nlohmann::ordered_json out;
  out["solver"] = "sinkhorn";
  out["cost_function"] = ot::cost_name(cost_kind);
  out["n"] = p.x.total;
  out["m"] = p.y.total;
  out["dim"] = p.x.dim;
  out["ranks"] = comm.size();
  out["precision"] = std::is_same<T, float>::value ? "float" : "double";
  out["epsilon"] = report.epsilon;
  out["relative_epsilon"] = options.relative_epsilon;
  out["tau_a"] = options.tau_a;
  out["tau_b"] = options.tau_b;
  out["threshold"] = options.threshold;
  out["inner_iterations"] = options.inner_iterations;
  out["updates"] = ot::updates_name(options.updates);
  out["iterations"] = report.iterations;
  out["converged"] = report.converged;
  out["status"] = ot::status_name(report.status);
  out["error"] = report.errors.empty() ? 0.0 : report.errors.back();
  out["cost"] = blocks.cost[0];
  out["mass"] = blocks.mass[0];
  out["marginal_error"] = marginal_error;
  out["cost_storage"] = report.stored ? "stored" : "online";
  out["stored_bytes"] = report.stored_bytes;
  out["cost_memory"] = report.cost_memory;
  out["sinkhorn_domain"] = report.scaling_domain ? "scaling" : "log";
  out["scaling_fallback"] = report.scaling_fallback;
  out["tile_sweeps"] = report.tile_sweeps;
  out["joint_passes"] = report.joint_passes;
  out["strip_bytes"] = report.strip_bytes;
  out["seconds"] = report.seconds;

  // Everything a file needs, gathered before any rank writes.
  timed.emplace("gather and write");
  const auto f_all = comm.allgatherv(solver.f());
  const auto g = solver.g();
  std::vector<double> plan;
  if (!plan_path.empty()) {
    std::vector<std::int32_t> each_column(static_cast<std::size_t>(p.y.count));
    for (std::size_t j = 0; j < each_column.size(); ++j) each_column[j] = static_cast<std::int32_t>(j);
    plan = comm.allgatherv(solver.apply(std::vector<double>(static_cast<std::size_t>(p.y.count), 1.0), each_column,
                                        static_cast<std::int32_t>(p.y.count)));
  }
  if (!out_path.empty()) out["out"] = out_path;
  if (!plan_path.empty()) out["plan"] = plan_path;
  comm.phase([&] {
    if (!comm.is_root()) return;
    if (!out_path.empty()) write_potentials(out_path, f_all, g, report, out);
    if (!plan_path.empty()) {
      AtomicFile file(plan_path);
      {
        auto h5 = io::h5::File::create(file);
        h5.write("/plan", plan, {p.x.total, p.y.total});
        h5.write("/f", f_all);
        h5.write("/g", g);
        h5.write_numeric_attribute("/", "epsilon", std::vector<double>{report.epsilon}, true);
        h5.close();
      }
      file.commit();
    }
  });
  if (report.status != ot::SolveStatus::optimal)
    log::warn("ot: Sinkhorn stopped after " + std::to_string(report.iterations) + " iterations at error " +
              log::number_text(report.errors.empty() ? 0.0 : report.errors.back()) + " above --threshold " +
              log::number_text(options.threshold) + " (raise --max-iter or --threshold); results are the last iterate");
  timed.reset();
  if (comm.is_root()) log::out() << (pretty ? json_text(out, 2) : json_text(out)) << std::endl;
  return exit_ok;
}

// ------------------------------------------------------------------ EMD

double normalised_l1(const std::vector<double>& marginal, const std::vector<double>& w) {
  double sum = 0;
  for (double v : w) sum += v;
  double err = 0;
  for (std::size_t i = 0; i < w.size(); ++i) err += std::fabs(marginal[i] - w[i] / sum);
  return err;
}

Matrix<double> device_points(const std::vector<double>& values, std::int64_t rows, std::int64_t cols,
                             const char* label) {
  Matrix<double> m(no_init(label), rows, cols);
  auto host = Kokkos::create_mirror_view(m);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t k = 0; k < cols; ++k) host(i, k) = values[static_cast<std::size_t>(i * cols + k)];
  Kokkos::deep_copy(m, host);
  return m;
}

/// One exact problem: rank 0 reads, solves and writes; the phase makes its
/// failure every rank's.
int solve_emd(const po::variables_map& vm, const dist::Comm& comm, ot::Cost cost, const std::string& plan_path,
              bool pretty) {
  ot::EmdOptions eo;
  if (has(vm, "max-iter")) {
    eo.max_iter = option<std::int64_t>(vm, "max-iter");
    eo.validate();
  }
  nlohmann::ordered_json out;
  std::string status;
  const timers::Scope timed("solve on rank 0");
  comm.phase([&] {
    if (!comm.is_root()) return;
    Problem<double> p = read_problem<double>(vm, false, comm);
    settle_weights(p, WeightMass::scale_free, dist::Comm(MPI_COMM_SELF));
    Kokkos::Timer timer;
    const auto X = device_points(p.x.points, p.x.total, p.x.dim, "kotml::ot_cli::x");
    const auto Y = device_points(p.y.points, p.y.total, p.y.dim, "kotml::ot_cli::y");
    Matrix<double> C(no_init("kotml::ot_cli::cost"), p.x.total, p.y.total);
    ot::cost_matrix<double>(cost, X, Y, C);
    const auto host_cost = Kokkos::create_mirror_view_and_copy(HostSpace(), C);
    const auto s = ot::emd_dense(host_cost, p.x.weights, p.y.weights, eo);
    const double seconds = timer.seconds();
    std::vector<double> rows(static_cast<std::size_t>(p.x.total)), cols(static_cast<std::size_t>(p.y.total));
    for (std::size_t e = 0; e < s.plan_value.size(); ++e) {
      rows[static_cast<std::size_t>(s.plan_row[e])] += s.plan_value[e];
      cols[static_cast<std::size_t>(s.plan_col[e])] += s.plan_value[e];
    }
    status = ot::status_name(s.summary.status);
    // A plan that does not match the marginals, or has no finite cost, is no
    // answer: it is not written.
    if (s.summary.status == ot::SolveStatus::infeasible || s.summary.status == ot::SolveStatus::numerical_error)
      throw Error("", "emd", std::string("the exact solver found no valid plan (status '") + status +
                                 "'): the weights cannot be matched, or a cost is not finite; nothing written");
    out["solver"] = "emd";
    out["cost_function"] = ot::cost_name(cost);
    out["n"] = p.x.total;
    out["m"] = p.y.total;
    out["dim"] = p.x.dim;
    out["cost"] = s.summary.cost;
    out["objective"] = s.summary.cost;
    out["iterations"] = s.summary.iterations;
    out["marginal_error"] = normalised_l1(rows, p.x.weights) + normalised_l1(cols, p.y.weights);
    out["status"] = status;
    out["seconds"] = seconds;
    out["plan_size"] = s.summary.plan_size;
    if (!plan_path.empty()) {
      out["plan"] = plan_path;
      AtomicFile file(plan_path);
      {
        auto h5 = io::h5::File::create(file);
        h5.write("/plan_row", std::vector<std::int64_t>(s.plan_row.begin(), s.plan_row.end()));
        h5.write("/plan_col", std::vector<std::int64_t>(s.plan_col.begin(), s.plan_col.end()));
        h5.write("/plan_value", s.plan_value);
        h5.write_numeric_attribute("/", "shape", std::vector<std::int64_t>{p.x.total, p.y.total});
        h5.write("/f", s.f);
        h5.write("/g", s.g);
        h5.close();
      }
      file.commit();
    }
    if (status != "optimal")
      log::warn("ot: the emd solver stopped with status '" + status +
                (status == "max_iter" ? "' (raise --max-iter)" : "'") + "; the results are those of the last iterate");
    log::out() << (pretty ? json_text(out, 2) : json_text(out)) << std::endl;
  });
  return exit_ok;
}

// ------------------------------------------------------------------ entry

int run_ot(const po::variables_map& vm, const dist::Comm& comm) {
  const std::string solver = one_of(vm, "solver", {"emd", "sinkhorn"});
  const ot::Cost cost = ot::parse_cost(option<std::string>(vm, "cost"));
  const bool sinkhorn = solver == "sinkhorn";
  for (const char* name : {"epsilon", "relative-epsilon", "tau-a", "tau-b", "threshold", "inner-iterations",
                           "updates", "epsilon-init", "epsilon-decay", "cost-storage", "cost-memory", "online",
                           "precision", "out"})
    if (!sinkhorn && has(vm, name)) throw Error::option(name, "applies to --solver sinkhorn only");
  if (!sinkhorn && vm["online"].as<bool>()) throw Error::option("online", "applies to --solver sinkhorn only");
  const std::string plan_path = has(vm, "plan") ? option<std::string>(vm, "plan") : "";
  const std::string out_path = has(vm, "out") ? option<std::string>(vm, "out") : "";
  const bool pretty = vm["pretty"].as<bool>();
  std::vector<std::string> inputs;
  for (const char* name : {"input", "source", "target"})
    if (has(vm, name)) inputs.push_back(option<std::string>(vm, name));
  const std::string timers_json = option<std::string>(vm, "timers");
  check_outputs(comm, inputs, {{"plan", plan_path}, {"out", out_path}, {"timers", timers_json}});
  if (!out_path.empty() && !plan_path.empty() &&
      std::filesystem::weakly_canonical(out_path) == std::filesystem::weakly_canonical(plan_path))
    throw Error::option("out", "must differ from --plan");
  int code = exit_ok;
  if (!sinkhorn) {
    code = solve_emd(vm, comm, cost, plan_path, pretty);
  } else {
    const auto options = sinkhorn_options(vm);
    const std::string precision = one_of(vm, "precision", {"double", "float"});
    code = precision == "float" ? solve_sinkhorn<float>(vm, comm, options, cost, out_path, plan_path, pretty)
                                : solve_sinkhorn<double>(vm, comm, options, cost, out_path, plan_path, pretty);
  }
  report_timers(comm, "ot", timers_json);
  return code;
}

}  // namespace

Subcommand ot_subcommand() {
  Subcommand sub;
  sub.name = "ot";
  sub.summary = "optimal transport between two point sets (exact EMD, or entropic Sinkhorn across ranks)";
  sub.usage =
      "kotml ot (--input FILE.h5 | --source A.h5ad --target B.h5ad [--use-rep KEY | --layer NAME])\n"
      "         [--solver emd|sinkhorn] [--cost euclidean|sqeuclidean|cosine] [--plan PLAN.h5]\n"
      "  sinkhorn: [--epsilon E] [--relative-epsilon] [--tau-a T] [--tau-b T] [--threshold X]\n"
      "            [--inner-iterations N] [--max-iter N] [--updates alternating|symmetric]\n"
      "            [--epsilon-init M --epsilon-decay D] [--precision double|float]\n"
      "            [--cost-storage automatic|stored|online | --online] [--cost-memory BYTES] [-o OUT.h5]";
  sub.example = "mpirun -np 4 kotml ot --input points.h5 --solver sinkhorn --cost cosine -o potentials.h5";
  sub.declare = [](OptionGroups& groups, po::positional_options_description&) {
    groups.input.add_options()
        ("input", po::value<std::string>(),
         "HDF5 file with /x (n×d) and /y (m×d) points and optional weights /a (n), /b (m)")
        ("source", po::value<std::string>(), ".h5ad file whose cells are the source points (rows of the plan)")
        ("target", po::value<std::string>(), ".h5ad file whose cells are the target points (columns)")
        ("use-rep", po::value<std::string>(), "with .h5ad inputs: the points are obsm[KEY] (default: X)")
        ("layer", po::value<std::string>(), "with .h5ad inputs: the points are layers[NAME]");
    groups.model.add_options()
        ("cost", po::value<std::string>()->default_value("euclidean"),
         "ground cost: euclidean, sqeuclidean or cosine (Sinkhorn: as OTT-JAX defines them)");
    groups.solver.add_options()
        ("solver", po::value<std::string>()->default_value("emd"),
         "emd (exact, network simplex, one rank) or sinkhorn (entropic, log domain, tiled across ranks)")
        ("max-iter", po::value<std::int64_t>(),
         "iteration limit (Sinkhorn iterations, default 2000; EMD pivots, default 10000000)");
    groups.output.add_options()
        ("out,o", po::value<std::string>(),
         "Sinkhorn: write the potentials /f, /g (OTT's convention), /errors and /iterations here")
        ("plan", po::value<std::string>(),
         "write the plan (Sinkhorn: dense /plan n×m, small problems only; EMD: sparse /plan_row, "
         "/plan_col, /plan_value) with the potentials /f and /g")
        ("pretty", po::bool_switch(), "print the JSON summary indented instead of on one line");
    declare_timers_option(groups.output);
    declare_sinkhorn_options(groups, "double");
  };
  sub.run = run_ot;
  return sub;
}

}  // namespace kotml::cli
