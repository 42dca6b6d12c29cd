#include <gtest/gtest.h>

#include <cmath>

#include "kotml/graph/knn_graph.hpp"
#include "kotml/gw/generators.hpp"
#include "kotml/gw/quality.hpp"
#include "kotml/gw/sampled_gw.hpp"

using namespace kotml;
using namespace kotml::gw;

namespace {
Matrix<double> device_points(const Manifold& m) {
  Matrix<double> x("pts", m.n, m.dims);
  auto h = Kokkos::create_mirror_view(x);
  for (std::size_t f = 0; f < m.points.size(); ++f) h.data()[f] = m.points[f];
  Kokkos::deep_copy(x, h);
  return x;
}
}  // namespace

TEST(SampledGw, SpiralToSwissRoll) {
  dist::Comm comm;
  const auto src = spiral(400), tgt = swiss_roll(500);
  const auto gs = graph::build_knn_graph(device_points(src), 5, comm);
  const auto gt = graph::build_knn_graph(device_points(tgt), 5, comm);
  for (auto mode : {DistanceMode::precomputed, DistanceMode::dijkstra, DistanceMode::landmark}) {
    std::unique_ptr<DistanceProvider> ps, pt;
    if (mode == DistanceMode::precomputed) { ps = precomputed_from_graph(gs, comm); pt = precomputed_from_graph(gt, comm); }
    if (mode == DistanceMode::dijkstra) { ps = dijkstra_provider(gs, 2000, comm); pt = dijkstra_provider(gt, 2000, comm); }
    if (mode == DistanceMode::landmark) { ps = landmark_provider(gs, 20); pt = landmark_provider(gt, 20); }
    SampledGwOptions o;
    o.samples = 80; o.alpha = 0.8; o.epsilon = 0.005; o.max_iter = 300; o.s_shared = 400;
    Kokkos::Timer timer;
    const auto r = sampled_gw(*ps, *pt, o, comm);
    const double rho = angle_correlation(src.angle, tgt.angle, r.match);
    printf("%s: rho %.4f iters %d sinkhorn %lld cost %g time %.2f (samp %.2f dist %.2f cost %.2f sink %.2f upd %.2f)\n",
           to_string(mode).c_str(), rho, r.iterations, (long long)r.sinkhorn_iterations, r.gw_cost,
           timer.seconds(), r.timings.sampling, r.timings.distances, r.timings.cost, r.timings.sinkhorn, r.timings.update);
    EXPECT_GE(std::fabs(rho), 0.99);
  }
}
