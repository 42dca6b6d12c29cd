#pragma once
// Host kernels of the scaling-domain Sinkhorn (scaling_host.cpp, one copy per
// x86 SIMD level), shared by the batch solver (sinkhorn_scaling.cpp) and the
// tiled one (tiled_scaling.hpp).

#include <cstdint>

namespace kotml::ot::detail {

/// The limits of the scaling domain in precision T, for both solvers.
template <class T>
struct ScalingLimits;
template <>
struct ScalingLimits<float> {
  static constexpr double span = 60;       // batch solver: largest (max − min) cost over ε in a row
  static constexpr double bound = 0x1p40;  // absorb a scaling outside [1/bound, bound]
  static constexpr int column_floor = 64;  // the tiled solver's first K̃ keeps a column entry ≥ 2^−64
};
template <>
struct ScalingLimits<double> {
  static constexpr double span = 600;
  static constexpr double bound = 0x1p200;
  static constexpr int column_floor = 640;
};

/// Σ_j k_j w_j with a fixed lane layout: the bits depend on the inputs alone.
double scaling_dot_host(const double* k, const double* w, std::int64_t m);
float scaling_dot_host(const float* k, const float* w, std::int64_t m);
/// How many rows (or tiles) the streaming kernels below read at once: one
/// core reads several concurrent streams from memory faster than one.
constexpr int scaling_stream_rows = 4;
/// Rows shorter than this (bytes) come from cache in the batch solver's small
/// problems, where reading four at once gains nothing; they are read one by one.
constexpr std::int64_t scaling_stream_min_row_bytes = 4096;
/// out_s = scaling_dot_host(k + s·k_stride, w + s·w_stride, m) for
/// s < scaling_stream_rows, the same bits, the rows read together.
void scaling_dot_rows_host(const double* k, std::int64_t k_stride, const double* w, std::int64_t w_stride,
                           std::int64_t m, double* out);
void scaling_dot_rows_host(const float* k, std::int64_t k_stride, const float* w, std::int64_t w_stride,
                           std::int64_t m, float* out);
/// In one sweep over m columns: out_r = scaling_dot_host(next + r·next_stride,
/// w + r·w_stride, m) for r < scaling_stream_rows (nothing when next is null),
/// and, when prev is not null, row r of prev (prev + r·prev_stride) times
/// alpha[r] into acc, rows in order, the first assigning when `assign`: the
/// bits of the dot products and of a loop of scaling_axpy_host. The batch
/// solver's block: prev's rows come from cache while next's are read.
void scaling_dot_rows_axpy_host(const double* next, std::int64_t next_stride, const double* w,
                                std::int64_t w_stride, double* out, const double* prev, std::int64_t prev_stride,
                                const double* alpha, double* acc, bool assign, std::int64_t m);
void scaling_dot_rows_axpy_host(const float* next, std::int64_t next_stride, const float* w, std::int64_t w_stride,
                                float* out, const float* prev, std::int64_t prev_stride, const float* alpha,
                                float* acc, bool assign, std::int64_t m);
/// Rows r < scaling_stream_rows of a row tile across `tiles` column tiles,
/// tile J's row r at J·tile_stride + r·width (width entries; rows of a tile
/// are contiguous, so the four rows are one run per tile), in one pass over
/// the tiles: when next is set, totals[r] += (double)scaling_dot_host(row r of
/// next's tile J, w + J·width, width), tiles in order; when prev is set, its
/// row r times alpha[r] into acc + J·width, rows in order, the first assigning
/// when `assign` (the bits of a loop of scaling_axpy_host). The tiled joint
/// pass: next's rows stream from memory while prev's, the four before, come
/// from cache, and each tile's w and acc serve four rows.
void scaling_tile_rows_axpy_host(const double* next, const double* prev, std::int64_t tile_stride,
                                 std::int64_t width, std::int64_t tiles, const double* w, const double* alpha,
                                 double* acc, bool assign, double* totals);
void scaling_tile_rows_axpy_host(const float* next, const float* prev, std::int64_t tile_stride, std::int64_t width,
                                 std::int64_t tiles, const float* w, const float* alpha, float* acc, bool assign,
                                 double* totals);
/// top_k = max(top_k, alpha_i·k_ik) over a tile's rows, in row order.
void scaling_column_max_host(const double* tile, std::int64_t ld, std::int64_t rows, std::int64_t width,
                             const double* alpha, double* top);
void scaling_column_max_host(const float* tile, std::int64_t ld, std::int64_t rows, std::int64_t width,
                             const float* alpha, float* top);
/// acc_j (=|+=) alpha·k_j.
void scaling_axpy_host(const double* k, std::int64_t m, double alpha, double* acc, bool assign);
void scaling_axpy_host(const float* k, std::int64_t m, float alpha, float* acc, bool assign);
/// limbs[k·4, k·4 + 4) += acc_k·scale_k (scale null: acc_k) in fixed point,
/// k < width: the bits of ColumnFixed::deposit (dist::UnitFixed), poisoned
/// where that returns false, vectorised.
void deposit_columns_host(std::int64_t* limbs, const double* acc, const double* scale, std::int64_t width);
void deposit_columns_host(std::int64_t* limbs, const float* acc, const double* scale, std::int64_t width);
/// out_j = exp((shift + g_j − c_j)·s).
void scaling_kernel_row_host(const double* c, const double* g, std::int64_t m, double shift, double s, double* out);
void scaling_kernel_row_host(const float* c, const float* g, std::int64_t m, float shift, float s, float* out);
/// out_j = exp(u + h_j − s·c_j), one row of the tiled plan.
void plan_row_host(const double* c, const double* h, std::int64_t m, double u, double s, double* out);
void plan_row_host(const float* c, const float* h, std::int64_t m, float u, float s, float* out);
/// min_j and max_j of c_j − g_j.
void scaling_row_range_host(const double* c, const double* g, std::int64_t m, double* low, double* high);
void scaling_row_range_host(const float* c, const float* g, std::int64_t m, float* low, float* high);

}  // namespace kotml::ot::detail
