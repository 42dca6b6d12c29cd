// kotml ot: one optimal-transport problem between two point sets in an HDF5 file
// (/x: n×d, /y: m×d, optional weights /a: n, /b: m), solved exactly (network
// simplex) or entropically (log-domain Sinkhorn); one JSON object on stdout, the
// plan optionally written to an HDF5 file.

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "kotml/core/atomic_file.hpp"
#include "kotml/core/double_option.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/log.hpp"
#include "kotml/core/types.hpp"
#include "kotml/io/hdf5.hpp"
#include "kotml/ot/cost.hpp"
#include "kotml/ot/network_simplex.hpp"
#include "kotml/ot/sinkhorn.hpp"
#include "options.hpp"
#include "subcommand.hpp"

namespace kotml::cli {
namespace {

struct Input {
  std::int64_t n = 0, m = 0, dim = 0;
  std::vector<double> x, y, a, b;
};

std::vector<double> read_points(const io::h5::File& file, const std::string& name, std::int64_t& rows,
                                std::int64_t& cols) {
  if (!file.is_dataset(name))
    throw Error(file.path(), name, "missing: kotml ot needs the datasets /x (n×d) and /y (m×d)");
  const auto shape = file.shape(name);
  if (shape.size() != 2)
    throw Error(file.path(), name, "must be a 2-D dataset (points × dimensions), has " +
                                       std::to_string(shape.size()) + " dimensions");
  rows = shape[0];
  cols = shape[1];
  if (rows == 0) throw Error(file.path(), name, "the point set is empty");
  if (cols == 0) throw Error(file.path(), name, "the points have no coordinates");
  auto values = file.read<double>(name);
  for (std::size_t k = 0; k < values.size(); ++k)
    if (!std::isfinite(values[k]))
      throw Error(file.path(), name,
                  "point " + std::to_string(k / static_cast<std::size_t>(cols)) +
                      " has a non-finite coordinate (NaN or Inf)");
  return values;
}

std::vector<double> read_weights(const io::h5::File& file, const std::string& name, std::int64_t count) {
  if (!file.exists(name)) return std::vector<double>(static_cast<std::size_t>(count), 1.0);
  const auto shape = file.shape(name);
  if (shape.size() != 1 || shape[0] != count)
    throw Error(file.path(), name,
                "must be a 1-D dataset with one weight per point (" + std::to_string(count) + ")");
  auto w = file.read<double>(name);
  double sum = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (!std::isfinite(w[i]))
      throw Error(file.path(), name, "weight " + std::to_string(i) + " is not finite (NaN or Inf)");
    if (w[i] < 0) throw Error(file.path(), name, "weight " + std::to_string(i) + " is negative");
    sum += w[i];
  }
  if (!(sum > 0)) throw Error(file.path(), name, "the weights sum to zero");
  return w;
}

Input read_input(const std::string& path) {
  io::h5::verify_readable(path);
  const auto file = io::h5::File::open_read(path);
  Input in;
  std::int64_t dim_y = 0;
  in.x = read_points(file, "/x", in.n, in.dim);
  in.y = read_points(file, "/y", in.m, dim_y);
  if (dim_y != in.dim)
    throw Error(path, "/y", "has " + std::to_string(dim_y) + " dimensions but /x has " + std::to_string(in.dim));
  in.a = read_weights(file, "/a", in.n);
  in.b = read_weights(file, "/b", in.m);
  return in;
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

double normalised_l1(const std::vector<double>& marginal, const std::vector<double>& w) {
  double sum = 0;
  for (double v : w) sum += v;
  double err = 0;
  for (std::size_t i = 0; i < w.size(); ++i) err += std::fabs(marginal[i] - w[i] / sum);
  return err;
}

void write_plan(const std::string& path, const std::function<void(io::h5::File&)>& fill) {
  AtomicFile out(path);
  {
    auto file = io::h5::File::create(out.temporary_path());
    fill(file);
    file.close();
  }
  out.commit();
}

int run_ot(const po::variables_map& vm, const dist::Comm& comm) {
  const std::string input = option<std::string>(vm, "input");
  const std::string solver = one_of(vm, "solver", {"emd", "sinkhorn"});
  const ot::Cost cost = ot::parse_cost(option<std::string>(vm, "cost"));
  const bool sinkhorn = solver == "sinkhorn";
  for (const char* name : {"epsilon", "relative-epsilon", "tau-a", "tau-b", "tol"})
    if (!sinkhorn && has(vm, name))
      throw Error::option(name, "applies to --solver sinkhorn only");
  ot::SinkhornOptions so;
  ot::EmdOptions eo;
  if (sinkhorn) {
    so.epsilon = option<double>(vm, "epsilon");
    so.relative_epsilon = vm["relative-epsilon"].as<bool>();
    so.tau_a = option<double>(vm, "tau-a");
    so.tau_b = option<double>(vm, "tau-b");
    so.tol = option<double>(vm, "tol");
    if (has(vm, "max-iter")) {
      const auto it = option<std::int64_t>(vm, "max-iter");
      if (it < 1 || it > 2147483647) throw Error::option("max-iter", "must be in [1, 2147483647]");
      so.max_iter = static_cast<int>(it);
    }
    so.keep_plan = has(vm, "plan");
    so.validate();
  } else if (has(vm, "max-iter")) {
    eo.max_iter = option<std::int64_t>(vm, "max-iter");
    eo.validate();
  }
  const std::string plan_path = has(vm, "plan") ? option<std::string>(vm, "plan") : "";

  // One problem: rank 0 reads, solves and writes; the phase makes its failure
  // every rank's.
  comm.phase([&] {
    if (!comm.is_root()) return;
    const Input in = read_input(input);
    Kokkos::Timer timer;
    const auto X = device_points(in.x, in.n, in.dim, "kotml::ot_cli::x");
    const auto Y = device_points(in.y, in.m, in.dim, "kotml::ot_cli::y");
    Matrix<double> C(no_init("kotml::ot_cli::cost"), in.n, in.m);
    ot::cost_matrix<double>(cost, X, Y, C);

    nlohmann::ordered_json out;
    out["solver"] = solver;
    out["cost_function"] = ot::cost_name(cost);
    out["n"] = in.n;
    out["m"] = in.m;
    out["dim"] = in.dim;
    std::string status;
    if (sinkhorn) {
      Vector<double> f("kotml::ot_cli::f", in.n), g("kotml::ot_cli::g", in.m);
      Matrix<double> P;
      if (so.keep_plan) P = Matrix<double>(no_init("kotml::ot_cli::plan"), in.n, in.m);
      Vector<double> a(no_init("kotml::ot_cli::a"), in.n), b(no_init("kotml::ot_cli::b"), in.m);
      Kokkos::deep_copy(a, HostVector<const double>(in.a.data(), in.a.size()));
      Kokkos::deep_copy(b, HostVector<const double>(in.b.data(), in.b.size()));
      ot::DenseSinkhorn<double> solve;
      const auto s = solve.solve(C, a, b, so, f, g, P);
      const double seconds = timer.seconds();
      status = ot::status_name(s.status);
      out["cost"] = s.cost;
      out["objective"] = s.objective;
      out["iterations"] = s.iterations;
      out["marginal_error"] = s.marginal_error;
      out["status"] = status;
      out["seconds"] = seconds;
      out["epsilon"] = s.epsilon;
      out["tau_a"] = so.tau_a;
      out["tau_b"] = so.tau_b;
      if (so.keep_plan) {
        auto ph = Kokkos::create_mirror_view_and_copy(HostSpace(), P);
        auto fh = Kokkos::create_mirror_view_and_copy(HostSpace(), f);
        auto gh = Kokkos::create_mirror_view_and_copy(HostSpace(), g);
        write_plan(plan_path, [&](io::h5::File& file) {
          file.write("/plan", std::vector<double>(ph.data(), ph.data() + ph.size()), {in.n, in.m});
          file.write("/f", std::vector<double>(fh.data(), fh.data() + fh.size()));
          file.write("/g", std::vector<double>(gh.data(), gh.data() + gh.size()));
          file.write_numeric_attribute("/", "epsilon", std::vector<double>{s.epsilon}, true);
        });
      }
    } else {
      const auto host_cost = Kokkos::create_mirror_view_and_copy(HostSpace(), C);
      const auto s = ot::emd_dense(host_cost, in.a, in.b, eo);
      const double seconds = timer.seconds();
      std::vector<double> rows(static_cast<std::size_t>(in.n)), cols(static_cast<std::size_t>(in.m));
      for (std::size_t e = 0; e < s.plan_value.size(); ++e) {
        rows[static_cast<std::size_t>(s.plan_row[e])] += s.plan_value[e];
        cols[static_cast<std::size_t>(s.plan_col[e])] += s.plan_value[e];
      }
      status = ot::status_name(s.summary.status);
      out["cost"] = s.summary.cost;
      out["objective"] = s.summary.cost;
      out["iterations"] = s.summary.iterations;
      out["marginal_error"] = normalised_l1(rows, in.a) + normalised_l1(cols, in.b);
      out["status"] = status;
      out["seconds"] = seconds;
      out["plan_size"] = s.summary.plan_size;
      if (!plan_path.empty()) {
        write_plan(plan_path, [&](io::h5::File& file) {
          file.write("/plan_row", std::vector<std::int64_t>(s.plan_row.begin(), s.plan_row.end()));
          file.write("/plan_col", std::vector<std::int64_t>(s.plan_col.begin(), s.plan_col.end()));
          file.write("/plan_value", s.plan_value);
          file.write_numeric_attribute("/", "shape", std::vector<std::int64_t>{in.n, in.m});
          file.write("/f", s.f);
          file.write("/g", s.g);
        });
      }
    }
    if (!plan_path.empty()) out["plan"] = plan_path;
    if (status != "optimal")
      log::warn("ot: the " + solver + " solver stopped with status '" + status +
                (status == "max_iter" ? "' (raise --max-iter" + std::string(sinkhorn ? " or --tol" : "") + ")"
                                      : "'") +
                "; the results are those of the last iterate");
    log::out() << out.dump(2) << std::endl;
  });
  return exit_ok;
}

}  // namespace

Subcommand ot_subcommand() {
  Subcommand sub;
  sub.name = "ot";
  sub.summary = "optimal transport between two point sets (exact EMD or entropic Sinkhorn)";
  sub.usage =
      "kotml ot --input FILE.h5 [--solver emd|sinkhorn] [--cost euclidean|sqeuclidean|cosine]\n"
      "         [--epsilon E] [--relative-epsilon] [--tau-a T] [--tau-b T] [--max-iter N] [--tol X]\n"
      "         [--plan OUT.h5]";
  sub.declare = [](po::options_description& desc, po::positional_options_description&) {
    desc.add_options()
        ("input", po::value<std::string>()->required(),
         "HDF5 file with /x (n×d) and /y (m×d) points and optional weights /a (n), /b (m); "
         "weights default to uniform and are normalised to unit mass (balanced problems)")
        ("solver", po::value<std::string>()->default_value("emd"),
         "emd (exact, network simplex) or sinkhorn (entropic, log domain)")
        ("cost", po::value<std::string>()->default_value("euclidean"),
         "ground cost: euclidean, sqeuclidean or cosine")
        ("epsilon", kotml::double_option(0.05), "Sinkhorn: entropic regularisation ε > 0")
        ("relative-epsilon", po::bool_switch(), "Sinkhorn: ε is a fraction of the mean cost")
        ("tau-a", kotml::double_option(1.0),
         "Sinkhorn: τ ∈ (0,1] of the source marginal, ρ/(ρ+ε); 1 holds it exactly")
        ("tau-b", kotml::double_option(1.0), "Sinkhorn: τ ∈ (0,1] of the target marginal")
        ("max-iter", po::value<std::int64_t>(),
         "iteration limit (Sinkhorn iterations, default 1000; EMD pivots, default 10000000)")
        ("tol", kotml::double_option(1e-9), "Sinkhorn: tolerance on the L1 marginal error")
        ("plan", po::value<std::string>(),
         "write the plan to this HDF5 file (Sinkhorn: dense /plan n×m; EMD: sparse /plan_row, "
         "/plan_col, /plan_value), with the potentials /f and /g");
  };
  sub.run = run_ot;
  return sub;
}

}  // namespace kotml::cli
