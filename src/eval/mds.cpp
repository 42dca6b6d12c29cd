#include "kotml/eval/mds.hpp"

#include <Eigen/Dense>

#include <cmath>
#include <string>

#include "kotml/core/error.hpp"

namespace kotml::eval {

MdsResult classical_mds(const HostMatrix<double>& distances, int n_components) {
  const auto n = static_cast<Eigen::Index>(distances.extent(0));
  if (static_cast<Eigen::Index>(distances.extent(1)) != n)
    throw Error("", "distances", "MDS needs a square distance matrix");
  if (n_components < 1 || n_components > n)
    throw Error("", "mds", "cannot embed " + std::to_string(n) + " donors in " +
                               std::to_string(n_components) + " dimensions");
  Eigen::MatrixXd b(n, n);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j < n; ++j) {
      const double v = distances(i, j);
      if (!std::isfinite(v)) throw Error("", "distances", "non-finite distance in MDS input");
      b(i, j) = v * v;
    }
  // Double centring in scikit-learn's order: column means, then row means.
  const Eigen::RowVectorXd column_means = b.colwise().mean();
  b.rowwise() -= column_means;
  const Eigen::VectorXd row_means = b.rowwise().mean();
  b.colwise() -= row_means;
  b *= -0.5;
  // Rounding leaves B asymmetric in the last bits; the solver reads one triangle.
  const Eigen::MatrixXd symmetric = 0.5 * (b + b.transpose());
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(symmetric);
  if (solver.info() != Eigen::Success)
    throw Error("", "mds", "the eigen-decomposition of the centred distance matrix failed");

  MdsResult result;
  result.embedding = HostMatrix<double>("mds_embedding", static_cast<std::size_t>(n),
                                        static_cast<std::size_t>(n_components));
  for (int c = 0; c < n_components; ++c) {
    const Eigen::Index column = n - 1 - c;  // eigenvalues come in increasing order
    const double lambda = solver.eigenvalues()(column);
    result.eigenvalues.push_back(lambda);
    Eigen::VectorXd u = solver.eigenvectors().col(column);
    Eigen::Index largest = 0;
    for (Eigen::Index i = 1; i < n; ++i)
      if (std::fabs(u(i)) > std::fabs(u(largest))) largest = i;
    if (u(largest) < 0) u = -u;
    const double scale = lambda > 0.0 ? std::sqrt(lambda) : 0.0;
    for (Eigen::Index i = 0; i < n; ++i) result.embedding(static_cast<std::size_t>(i), static_cast<std::size_t>(c)) = scale * u(i);
  }
  return result;
}

}  // namespace kotml::eval
