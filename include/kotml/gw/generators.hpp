#pragma once
// The benchmark clouds of TorchGW's tests and examples (tests/test_spiral_swissroll.py,
// examples/benchmark_scale.py), drawn from kotml's own seeded streams:
//   spiral (N):     r = linspace(0.3, 1, N), θ = linspace(0, 9, N),
//                   x = (r + 0.05·e₀) cos θ,  y = (r + 0.05·e₁) sin θ;
//   Swiss roll (K): the same curve plus z ~ U[0, 1), columns (x, z, y).
// e₀, e₁ are standard normal draws. Point i draws from
// random::Stream(seed, Purpose::test_data, i), so a cloud does not depend on
// where or in which order it is generated. TorchGW draws from numpy's
// default_rng(0) and default_rng(1): the noise differs, its law is the same.

#include <cstdint>
#include <vector>

#include "kotml/core/types.hpp"

namespace kotml::gw {

struct Manifold {
  std::int64_t n = 0;
  std::int64_t dims = 0;
  std::vector<double> points;  ///< n × dims, row-major
  std::vector<double> angle;   ///< θ of each point: the ground truth of a matching
};

/// 2-D noisy spiral with N points (TorchGW uses seed 0).
Manifold spiral(std::int64_t n, std::uint64_t seed = 0);
/// 3-D Swiss roll with K points (TorchGW uses seed 1).
Manifold swiss_roll(std::int64_t n, std::uint64_t seed = 1);

/// The cloud's points as an n × dims View in device memory.
Matrix<double> device_points(const Manifold& cloud);

}  // namespace kotml::gw
