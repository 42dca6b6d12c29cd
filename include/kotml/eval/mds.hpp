#pragma once
// Classical (Torgerson) multidimensional scaling of a donor distance matrix: the
// coordinates whose Euclidean distances best reproduce the double-centred
// squared distances. Same recipe and sign convention as scikit-learn's
// ClassicalMDS (each axis flipped so that its largest-magnitude entry is
// positive); negative eigenvalues, which a non-Euclidean OT matrix can have,
// give a zero axis instead of NaN.

#include <vector>

#include "kotml/core/types.hpp"

namespace kotml::eval {

struct MdsResult {
  HostMatrix<double> embedding;     // n × n_components
  std::vector<double> eigenvalues;  // the n_components largest, decreasing
};

MdsResult classical_mds(const HostMatrix<double>& distances, int n_components = 2);

}  // namespace kotml::eval
