#pragma once
// Projection of staged donor points by a metric A (k × d): Z = X Aᵀ on the
// device, deterministic (each sum in feature order), as the cloud batches the
// OT solvers take.

#include <cstdint>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/ot/batch.hpp"
#include "kotml/stage/donor_store.hpp"

namespace kotml::stage {

/// Z = X Aᵀ for the rows of the device matrix X (float), into Z (rows × k, double
/// or float), accumulated in double in feature order: deterministic.
void project_rows(const Matrix<const PointScalar>& X, const Matrix<const double>& A, const Matrix<double>& Z);
void project_rows(const Matrix<const PointScalar>& X, const Matrix<const double>& A, const Matrix<float>& Z);

/// The listed donors (staged in `staged`) projected by A into one device pool, as
/// a cloud batch (cloud c = donors[c]). In group-by mode the shared support is
/// projected once and every cloud points at it.
template <class T>
struct ProjectedCloudsOf {
  ot::CloudBatch<T> clouds;
  std::vector<GlobalId> donors;
};
using ProjectedClouds = ProjectedCloudsOf<double>;
template <class T>
ProjectedCloudsOf<T> project_clouds(const BatchStage& staged, const std::vector<GlobalId>& donors,
                                    const Matrix<const double>& A);

/// A copy of a host metric in device memory.
Matrix<double> metric_to_device(const HostMatrix<double>& a);

}  // namespace kotml::stage
