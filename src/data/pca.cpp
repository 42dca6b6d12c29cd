// Block Lanczos PCA with implicit centring (see pca.hpp).

#include "kotml/data/pca.hpp"

#include <Eigen/Dense>
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "kotml/core/error.hpp"
#include "kotml/core/gemm.hpp"
#include "kotml/core/random.hpp"
#include "kotml/core/region.hpp"
#include "staging.hpp"

extern "C" void dsyevr_(const char* jobz, const char* range, const char* uplo, const int* n, double* a,
                        const int* lda, const double* vl, const double* vu, const int* il, const int* iu,
                        const double* abstol, int* found, double* w, double* z, const int* ldz, int* isuppz,
                        double* work, const int* lwork, int* iwork, const int* liwork, int* info,
                        std::size_t jobz_length, std::size_t range_length, std::size_t uplo_length);
extern "C" void dgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                       const double* alpha, const double* a, const int* lda, const double* b, const int* ldb,
                       const double* beta, double* c, const int* ldc, std::size_t transa_length,
                       std::size_t transb_length);

namespace kotml::data {
namespace {

using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vec = Eigen::VectorXd;
using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
using Partials = Kokkos::View<double***, Kokkos::LayoutRight, MemSpace>;

/// Columns of a block handled by one thread: its partial sums live in registers.
constexpr std::int64_t panel = 8;
/// Cells per dense tile of the Gram operator (at most; fewer cells, fewer rows).
constexpr std::int64_t gram_tile_cells = 512;
/// Features per block of C: one GEMM per block pair on or above the diagonal.
constexpr std::int64_t gram_block_features = 128;

using LeftMatrix = Kokkos::View<double**, Kokkos::LayoutLeft, MemSpace>;
using LeftBlock = Kokkos::View<const double**, Kokkos::LayoutLeft, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// The cells' CSR as the kernels read it: 32-bit column indices (features are
/// far fewer than 2^31) to cut the bytes streamed per stored value.
struct Cells {
  std::int64_t rows = 0, cols = 0;
  Vector<const std::int64_t> indptr;
  Vector<const std::int32_t> indices;
  Vector<const float> values;
};

Cells to_cells(const HostCsr& x) {
  return Cells{x.rows, x.cols, detail::stage(x.indptr), detail::stage(x.indices), detail::stage(x.values)};
}

/// Rows per chunk: a function of the row count only, so the chunk sums below
/// are added in the same order for any thread count; at most 256 chunks.
std::int64_t chunk_rows(std::int64_t rows) { return std::max<std::int64_t>(512, (rows + 255) / 256); }

/// C V = A^T (A V) in one pass over the cells, A = X - 1 mu^T. For each row r and
/// panel of columns: b_r = x_r V - mu^T V (registers), then partial(chunk, j, :)
/// += x_rj b_r for the row's stored j, and sums(chunk, :) += b_r. One thread per
/// (chunk, panel) owns its slices, so nothing is shared.
struct GramChunks {
  Cells x;
  Matrix<const double> v;        // features × l
  Vector<const double> shift;    // mu^T V, length l
  Partials partial;              // chunks × features × l
  Matrix<double> sums;           // chunks × l
  std::int64_t rows_per_chunk, panels;

  /// The chunk's rows for columns c0 .. c0 + width; width is a compile-time
  /// constant for full panels so the column loops unroll.
  template <std::int64_t Width>
  KOKKOS_INLINE_FUNCTION void rows(const std::int64_t chunk, const std::int64_t c0, const std::int64_t width) const {
    const std::int64_t w = Width > 0 ? Width : width;
    double total[panel] = {0, 0, 0, 0, 0, 0, 0, 0};
    const std::int64_t begin = chunk * rows_per_chunk;
    const std::int64_t end = begin + rows_per_chunk < x.rows ? begin + rows_per_chunk : x.rows;
    for (std::int64_t r = begin; r < end; ++r) {
      double b[panel] = {0, 0, 0, 0, 0, 0, 0, 0};
      const std::int64_t p0 = x.indptr(r), p1 = x.indptr(r + 1);
      for (std::int64_t p = p0; p < p1; ++p) {
        const double value = static_cast<double>(x.values(p));
        const double* vj = &v(x.indices(p), c0);
        for (std::int64_t c = 0; c < w; ++c) b[c] += value * vj[c];
      }
      for (std::int64_t c = 0; c < w; ++c) {
        b[c] -= shift(c0 + c);
        total[c] += b[c];
      }
      for (std::int64_t p = p0; p < p1; ++p) {
        const double value = static_cast<double>(x.values(p));
        double* out = &partial(chunk, x.indices(p), c0);
        for (std::int64_t c = 0; c < w; ++c) out[c] += value * b[c];
      }
    }
    for (std::int64_t c = 0; c < w; ++c) sums(chunk, c0 + c) = total[c];
  }

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t item) const {
    const std::int64_t chunk = item / panels;
    const std::int64_t c0 = (item % panels) * panel;
    const auto l = static_cast<std::int64_t>(v.extent(1));
    const std::int64_t width = l - c0 < panel ? l - c0 : panel;
    for (std::int64_t j = 0; j < x.cols; ++j)
      for (std::int64_t c = 0; c < width; ++c) partial(chunk, j, c0 + c) = 0.0;
    if (width == panel)
      rows<panel>(chunk, c0, width);
    else
      rows<0>(chunk, c0, width);
  }
};

/// w(j, c) = sum over chunks, in chunk order, of partial(chunk, j, c), minus
/// mu_j · (1^T A V)(c).
struct ReduceChunks {
  Partials partial;
  Matrix<const double> sums;
  Vector<const double> mu;
  Matrix<double> w;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t item) const {
    const auto l = static_cast<std::int64_t>(w.extent(1));
    const std::int64_t j = item / l, c = item % l;
    double value = 0, total = 0;
    for (std::size_t chunk = 0; chunk < partial.extent(0); ++chunk) {
      value += partial(chunk, j, c);
      total += sums(chunk, c);
    }
    w(j, c) = value - mu(j) * total;
  }
};

/// out(r, :) = x_r · in - shift, one thread per (row, panel): A·Y for the scores.
struct CellsTimesBlock {
  Cells x;
  Matrix<const double> in;
  Vector<const double> shift;
  Matrix<double> out;
  std::int64_t panels;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t item) const {
    const std::int64_t r = item / panels;
    const std::int64_t c0 = (item % panels) * panel;
    const auto l = static_cast<std::int64_t>(in.extent(1));
    const std::int64_t width = l - c0 < panel ? l - c0 : panel;
    double acc[panel] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (std::int64_t p = x.indptr(r); p < x.indptr(r + 1); ++p) {
      const double value = static_cast<double>(x.values(p));
      const double* row = &in(x.indices(p), c0);
      for (std::int64_t c = 0; c < width; ++c) acc[c] += value * row[c];
    }
    for (std::int64_t c = 0; c < width; ++c) out(r, c0 + c) = acc[c] - shift(c0 + c);
  }
};

/// Per chunk and feature: sum and sum of squares of the stored values.
struct MomentChunks {
  Cells x;
  Partials partial;  // chunks × features × 2
  std::int64_t rows_per_chunk;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t chunk) const {
    for (std::int64_t j = 0; j < x.cols; ++j) partial(chunk, j, 0) = partial(chunk, j, 1) = 0.0;
    const std::int64_t begin = chunk * rows_per_chunk;
    const std::int64_t end = begin + rows_per_chunk < x.rows ? begin + rows_per_chunk : x.rows;
    for (std::int64_t p = x.indptr(begin); p < x.indptr(end); ++p) {
      const double value = static_cast<double>(x.values(p));
      partial(chunk, x.indices(p), 0) += value;
      partial(chunk, x.indices(p), 1) += value * value;
    }
  }
};

/// moments(j, k) = sum over chunks, in order, of partial(chunk, j, k).
struct SumChunks {
  Partials partial;
  Matrix<double> moments;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t j) const {
    double s = 0, s2 = 0;
    for (std::size_t chunk = 0; chunk < partial.extent(0); ++chunk) {
      s += partial(chunk, j, 0);
      s2 += partial(chunk, j, 1);
    }
    moments(j, 0) = s;
    moments(j, 1) = s2;
  }
};

/// A dense centred tile of `rows` cells, stored by feature block: block a
/// (features a0 .. a0 + w_a, gram_block_features wide but the last) is the
/// column-major w_a × rows matrix U_a = T(:, a0 .. a0 + w_a)^T at offset a0 · rows,
/// so a cell's values for one block are contiguous (its row is filled with few
/// cache lines) and each block is a GEMM operand as it stands.
struct CentredTileRow {
  Cells x;
  Vector<const double> mu;
  Vector<double> storage;  // features × rows
  std::int64_t rows, first, cells;

  KOKKOS_INLINE_FUNCTION double& at(const std::int64_t r, const std::int64_t j) const {
    const std::int64_t a0 = j - j % gram_block_features;
    const std::int64_t width = x.cols - a0 < gram_block_features ? x.cols - a0 : gram_block_features;
    return storage(a0 * rows + r * width + (j - a0));
  }

  /// Row r: T(r, j) = x_{first + r, j} - mu_j for the tile's cells, 0 past the last.
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t r) const {
    const bool cell = r < cells;
    for (std::int64_t a0 = 0; a0 < x.cols; a0 += gram_block_features) {
      const std::int64_t width = x.cols - a0 < gram_block_features ? x.cols - a0 : gram_block_features;
      double* row = &storage(a0 * rows + r * width);
      for (std::int64_t j = 0; j < width; ++j) row[j] = cell ? -mu(a0 + j) : 0.0;
    }
    if (!cell) return;
    for (std::int64_t p = x.indptr(first + r); p < x.indptr(first + r + 1); ++p)
      at(r, x.indices(p)) += static_cast<double>(x.values(p));
  }
};

void run_gram_chunks(const GramChunks& k, std::int64_t items) {
  Kokkos::parallel_for("kotml::data::pca_gram_chunks", Range(0, items), k);
}
void run_reduce_chunks(const ReduceChunks& k, std::int64_t items) {
  Kokkos::parallel_for("kotml::data::pca_reduce_chunks", Range(0, items), k);
}
void run_cells_times_block(const CellsTimesBlock& k, std::int64_t items) {
  Kokkos::parallel_for("kotml::data::pca_cells_times_block", Range(0, items), k);
}
void run_moment_chunks(const MomentChunks& k, std::int64_t chunks) {
  Kokkos::parallel_for("kotml::data::pca_moment_chunks", Range(0, chunks), k);
}
void run_sum_chunks(const SumChunks& k, std::int64_t features) {
  Kokkos::parallel_for("kotml::data::pca_sum_chunks", Range(0, features), k);
}

/// out(first + r, c) = product(c, r): a tile's scores, stored transposed by its GEMM.
struct CopyTileScores {
  LeftMatrix product;
  Matrix<double> out;
  std::int64_t first;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t r) const {
    for (std::size_t c = 0; c < product.extent(0); ++c) out(first + r, c) = product(c, r);
  }
};

void run_copy_tile_scores(const CopyTileScores& k, std::int64_t cells) {
  Kokkos::parallel_for("kotml::data::pca_copy_tile_scores", Range(0, cells), k);
}
void run_centred_tile(const CentredTileRow& k) {
  Kokkos::parallel_for("kotml::data::pca_centred_tile", Range(0, k.rows), k);
}

/// Features [begin, end) of each block of C.
struct FeatureBlock {
  std::int64_t begin, end;
  std::int64_t size() const { return end - begin; }
};

std::vector<FeatureBlock> feature_blocks(std::int64_t features) {
  std::vector<FeatureBlock> blocks;
  for (std::int64_t j = 0; j < features; j += gram_block_features)
    blocks.push_back({j, std::min(features, j + gram_block_features)});
  return blocks;
}

std::int64_t tile_rows(std::int64_t cells) { return std::min(cells, gram_tile_cells); }

/// Multiply-adds of forming C: every tile's GEMMs over the block pairs j <= k.
double gram_multiply_adds(std::int64_t cells, std::int64_t features) {
  const auto rows = tile_rows(cells);
  const auto tiles = (cells + rows - 1) / rows;
  double per_row = 0;
  const auto blocks = feature_blocks(features);
  for (std::size_t a = 0; a < blocks.size(); ++a)
    for (std::size_t b = a; b < blocks.size(); ++b)
      per_row += static_cast<double>(blocks[a].size()) * static_cast<double>(blocks[b].size());
  return static_cast<double>(tiles * rows) * per_row;
}

/// The Lanczos basis at which the iteration stops at the latest.
std::int64_t largest_basis(std::int64_t features, const PcaOptions& o) {
  const std::int64_t block = std::min(o.block_size, features);
  return std::min(features, o.max_basis > 0 ? std::max(o.max_basis, o.n_comps + block)
                                            : std::max<std::int64_t>(20 * o.n_comps, 400));
}

Matrix<double> device_copy(const std::string& label, const Mat& m) {
  Matrix<double> d(no_init(label), m.rows(), m.cols());
  Kokkos::deep_copy(d, detail::HostUnmanagedMatrix<const double>(m.data(), m.rows(), m.cols()));
  return d;
}

Mat host_copy(const Matrix<double>& d) {
  Mat m(d.extent(0), d.extent(1));
  Kokkos::deep_copy(detail::HostUnmanagedMatrix<double>(m.data(), m.rows(), m.cols()), d);
  return m;
}

Vector<double> device_vector(const std::string& label, const Vec& v) {
  return detail::to_device(label, std::vector<double>(v.data(), v.data() + v.size()));
}

/// The k largest eigenvalues of a symmetric matrix, descending, and their
/// eigenvectors (columns). LAPACK's dsyevr: one reduction to tridiagonal form,
/// then only the k wanted pairs (bisection and inverse iteration for a part of
/// the spectrum) and their back-transformation, where a full eigensolver would
/// also rotate every other eigenvector (measured: Eigen's full solves of the
/// projected matrix were a fifth of `kotml prep` at 15,000 cells).
struct Eigenpairs {
  Vec values;
  Mat vectors;
};

Eigenpairs leading_eigenpairs(Mat symmetric, std::int64_t k) {
  const int n = static_cast<int>(symmetric.rows()), first = n - static_cast<int>(k) + 1, last = n;
  const double unused = 0, abstol = 0;
  int found = 0, info = 0, lwork = -1, liwork = -1, iwork_size = 0;
  double work_size = 0;
  Eigen::VectorXd w(n);
  Eigen::MatrixXd z(n, k);  // column-major, as LAPACK writes it
  std::vector<int> isuppz(2 * static_cast<std::size_t>(k));
  // The matrix is symmetric, so its row-major storage is its column-major one.
  dsyevr_("V", "I", "U", &n, symmetric.data(), &n, &unused, &unused, &first, &last, &abstol, &found, w.data(),
          z.data(), &n, isuppz.data(), &work_size, &lwork, &iwork_size, &liwork, &info, 1, 1, 1);
  internal_check(info == 0, "dsyevr workspace query failed with info " + std::to_string(info));
  lwork = static_cast<int>(work_size);
  liwork = iwork_size;
  std::vector<double> work(static_cast<std::size_t>(lwork));
  std::vector<int> iwork(static_cast<std::size_t>(liwork));
  dsyevr_("V", "I", "U", &n, symmetric.data(), &n, &unused, &unused, &first, &last, &abstol, &found, w.data(),
          z.data(), &n, isuppz.data(), work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1, 1);
  internal_check(info == 0 && found == k, "dsyevr failed with info " + std::to_string(info) + " (" +
                                              std::to_string(found) + " of " + std::to_string(k) + " pairs)");
  Eigenpairs pairs{Vec(k), Mat(n, k)};
  for (std::int64_t i = 0; i < k; ++i) {  // dsyevr returns them ascending
    pairs.values(i) = w(k - 1 - i);
    pairs.vectors.col(i) = z.col(k - 1 - i);
  }
  return pairs;
}

Mat thin_q(const Mat& m) {
  Eigen::HouseholderQR<Mat> qr(m);
  return qr.householderQ() * Mat::Identity(m.rows(), m.cols());
}

/// The centred operator A = X - 1 mu^T of the cells, on the device.
class CentredCells {
 public:
  explicit CentredCells(const HostCsr& x) : x_(to_cells(x)), rows_per_chunk_(chunk_rows(x.rows)) {
    chunks_ = (x.rows + rows_per_chunk_ - 1) / rows_per_chunk_;
  }

  /// Per feature: sum and sum of squares over the cells (features × 2).
  Mat moments() const {
    MomentChunks k{x_, Partials(no_init("pca moment partials"), chunks_, x_.cols, 2), rows_per_chunk_};
    run_moment_chunks(k, chunks_);
    Matrix<double> moments(no_init("pca moments"), x_.cols, 2);
    run_sum_chunks(SumChunks{k.partial, moments}, x_.cols);
    return host_copy(moments);
  }

  void set_mean(const std::vector<double>& mean) {
    mu_ = Eigen::Map<const Vec>(mean.data(), static_cast<Eigen::Index>(mean.size()));
    mu_device_ = detail::to_device("pca mean", mean);
  }

  /// A^T A V (features × l).
  Mat gram_times(const Mat& v) const {
    const auto l = static_cast<std::int64_t>(v.cols());
    GramChunks k{x_,
                 device_copy("pca V", v),
                 device_vector("pca mu^T V", v.transpose() * mu_),
                 Partials(no_init("pca gram partials"), chunks_, x_.cols, l),
                 Matrix<double>(no_init("pca chunk sums"), chunks_, l),
                 rows_per_chunk_,
                 (l + panel - 1) / panel};
    run_gram_chunks(k, chunks_ * k.panels);
    Matrix<double> w(no_init("pca A^T A V"), x_.cols, l);
    run_reduce_chunks(ReduceChunks{k.partial, k.sums, mu_device_, w}, x_.cols * l);
    return host_copy(w);
  }

  /// C = A^T A (features × features), from dense centred tiles of cells (see
  /// pca.hpp): one GEMM per block pair j <= k and tile, added in tile order.
  Mat gram_matrix() const {
    const ProfilingRegion region("kotml::data::pca_gram_matrix");
    const auto blocks = feature_blocks(x_.cols);
    std::vector<BlockPair> pairs;
    std::vector<LeftMatrix> products;
    for (std::size_t a = 0; a < blocks.size(); ++a)
      for (std::size_t b = a; b < blocks.size(); ++b) {
        pairs.push_back({blocks[a], blocks[b]});
        products.emplace_back("pca Gram block", blocks[a].size(), blocks[b].size());
      }
    for_each_tile([&](const CentredTileRow& tile) { add_block_products(tile, pairs, products); });
    Mat c(x_.cols, x_.cols);
    std::size_t product = 0;
    for (std::size_t a = 0; a < blocks.size(); ++a)
      for (std::size_t b = a; b < blocks.size(); ++b) {
        const auto block = Kokkos::create_mirror_view_and_copy(HostSpace(), products[product++]);
        for (std::int64_t i = 0; i < blocks[a].size(); ++i)
          for (std::int64_t j = 0; j < blocks[b].size(); ++j)
            c(blocks[a].begin + i, blocks[b].begin + j) = c(blocks[b].begin + j, blocks[a].begin + i) = block(i, j);
      }
    return c;
  }

  /// A Y (cells × l) from the dense centred tiles, one GEMM per tile: n · g · l
  /// multiply-adds, cheaper than the stored values' pass where C was formed.
  Mat times_by_tiles(const Mat& y) const {
    const ProfilingRegion region("kotml::data::pca_scores_by_tiles");
    const auto l = static_cast<std::int64_t>(y.cols());
    const auto y_device = device_copy("pca Y", y);
    Matrix<double> out(no_init("pca A Y"), x_.rows, l);
    LeftMatrix product(no_init("pca tile scores"), l, tile_rows(x_.rows));  // (T Y)^T = sum_a Y_a^T U_a
    const auto blocks = feature_blocks(x_.cols);
    for_each_tile([&](const CentredTileRow& tile) {
      for (std::size_t a = 0; a < blocks.size(); ++a) {
        // Rows a0 .. a1 of the row-major g × l Y are the column-major l × w_a Y_a^T.
        const LeftBlock y_t(y_device.data() + blocks[a].begin * l, l, blocks[a].size());
        kotml::gemm("N", "N", 1.0, y_t, tile_block(tile, blocks[a]), a == 0 ? 0.0 : 1.0, product);
      }
      run_copy_tile_scores(CopyTileScores{product, out, tile.first}, tile.cells);
    });
    return host_copy(out);
  }

  /// A Y (cells × l).
  Mat times(const Mat& y) const {
    const auto l = static_cast<std::int64_t>(y.cols());
    CellsTimesBlock k{x_, device_copy("pca Y", y), device_vector("pca mu^T Y", y.transpose() * mu_),
                      Matrix<double>(no_init("pca A Y"), x_.rows, l), (l + panel - 1) / panel};
    run_cells_times_block(k, x_.rows * k.panels);
    return host_copy(k.out);
  }

 private:
  /// visit(tile) for each dense centred tile of cells (CentredTileRow), in cell order.
  template <class Visit>
  void for_each_tile(Visit&& visit) const {
    const std::int64_t rows = tile_rows(x_.rows);
    CentredTileRow tile{x_, mu_device_, Vector<double>(no_init("pca centred tile"), x_.cols * rows), rows, 0, 0};
    for (tile.first = 0; tile.first < x_.rows; tile.first += rows) {
      tile.cells = std::min(rows, x_.rows - tile.first);
      run_centred_tile(tile);
      visit(static_cast<const CentredTileRow&>(tile));
    }
  }

  struct BlockPair {
    FeatureBlock a, b;
  };

  /// products[p] += U_a U_bᵀ for every block pair p = (a, b) of one tile. With
  /// the tiles in host memory the pairs are shared among ExecSpace's threads,
  /// each pair one single-threaded BLAS call into its own product, so C has the
  /// same bits for every thread count (BLAS's own threads would have to share
  /// the cores with Kokkos' spinning ones; measured in perf/RESULTS.md). On a
  /// device Kokkos Kernels multiplies the pairs one after another. Every entry
  /// point has already set one BLAS thread per rank (core/blas_threads.hpp).
  static void add_block_products(const CentredTileRow& tile, const std::vector<BlockPair>& pairs,
                                 const std::vector<LeftMatrix>& products) {
    if (!device_is_host) {
      for (std::size_t p = 0; p < pairs.size(); ++p)
        kotml::gemm("N", "T", 1.0, tile_block(tile, pairs[p].a), tile_block(tile, pairs[p].b), 1.0, products[p]);
      return;
    }
    const auto count = static_cast<std::int64_t>(pairs.size());
    Kokkos::parallel_for(
        "kotml::data::pca_gram_block_pairs",
        Kokkos::RangePolicy<HostExecSpace, Kokkos::Schedule<Kokkos::Dynamic>, Kokkos::IndexType<std::int64_t>>(0, count),
        [&](const std::int64_t p) {
          const BlockPair& pair = pairs[static_cast<std::size_t>(p)];
          const LeftMatrix& product = products[static_cast<std::size_t>(p)];
          const int m = static_cast<int>(pair.a.size()), n = static_cast<int>(pair.b.size());
          const int k = static_cast<int>(tile.rows), ldc = static_cast<int>(product.stride(1));
          const double one = 1.0;
          dgemm_("N", "T", &m, &n, &k, &one, tile_block(tile, pair.a).data(), &m, tile_block(tile, pair.b).data(), &n,
                 &one, product.data(), &ldc, 1, 1);
        });
    HostExecSpace().fence();
  }

  /// U_a of a tile: the column-major w_a × rows block of features a.
  static LeftBlock tile_block(const CentredTileRow& tile, const FeatureBlock& block) {
    return LeftBlock(tile.storage.data() + block.begin * tile.rows, block.size(), tile.rows);
  }

  Cells x_;
  std::int64_t rows_per_chunk_ = 0, chunks_ = 0;
  Vec mu_;
  Vector<const double> mu_device_;
};

/// Orthogonalises w against the columns of q (two passes of classical
/// Gram–Schmidt, enough for full orthogonality in double) and returns the
/// coefficients of the first pass plus the second.
Mat orthogonalise(const Mat& q, Mat& w) {
  Mat coefficients = q.transpose() * w;
  w -= q * coefficients;
  const Mat again = q.transpose() * w;
  w -= q * again;
  return coefficients + again;
}

/// The leading Ritz pairs of C and how they were reached.
struct RitzPairs {
  Vec theta;  // k values, descending
  Mat y;      // g × k unit vectors
  std::int64_t iterations = 0, basis_size = 0;
  bool converged = false;
  double residual = 0;
};

/// Block Lanczos with full reorthogonalisation on C, applied by apply(V) = C V
/// (see pca.hpp). basis holds Q_1..Q_j; t is the projected matrix Q^T C Q,
/// filled column block by column block.
RitzPairs lanczos(const std::function<Mat(const Mat&)>& apply, std::int64_t g, const PcaOptions& o) {
  const std::int64_t k = o.n_comps;
  const std::int64_t b = std::min(o.block_size, g);
  const std::int64_t max_basis = largest_basis(g, o);
  RitzPairs result;
  random::Stream stream(o.seed, random::Purpose::pca, 0);
  const auto gaussian_block = [&](std::int64_t cols) {
    Mat m(g, cols);
    for (std::int64_t i = 0; i < g; ++i)
      for (std::int64_t c = 0; c < cols; ++c) m(i, c) = stream.normal();
    return m;
  };
  Mat basis = thin_q(gaussian_block(b));
  Mat t = Mat::Zero(max_basis, max_basis);
  Mat ritz;  // columns: the k leading eigenvectors of t, by descending Ritz value
  // Convergence checks cost an m × m eigensolve: they are spaced by predicting,
  // from the last two residuals, where the residual reaches tol.
  std::int64_t m = 0, next_check = k + b, previous_m = 0;
  double previous_residual = 0;
  const auto solve_projected = [&](std::int64_t size) {
    Mat tm = t.topLeftCorner(size, size);
    tm = 0.5 * (tm + tm.transpose()).eval();
    auto pairs = leading_eigenpairs(std::move(tm), k);
    result.theta = std::move(pairs.values);
    ritz = std::move(pairs.vectors);
  };
  while (true) {
    const std::int64_t j0 = m;
    const std::int64_t width = basis.cols() - j0;  // the newest block
    Mat w = apply(basis.rightCols(width));
    ++result.iterations;
    const Mat coefficients = orthogonalise(basis, w);  // Q^T C Q_new, then w ⟂ Q
    t.block(0, j0, j0 + width, width) = coefficients;
    t.block(j0, 0, width, j0) = coefficients.topRows(j0).transpose();
    m = j0 + width;

    // Next block: w = Q_w R. A rank-deficient w (an invariant subspace) is
    // topped up with fresh random directions, orthogonal to the basis.
    Eigen::HouseholderQR<Mat> qr(w);
    Mat q_w = qr.householderQ() * Mat::Identity(g, width);
    Mat r_full = qr.matrixQR().topRows(width).triangularView<Eigen::Upper>();
    const double scale = std::max(1e-300, std::fabs(t(0, 0)));
    const std::int64_t next = std::min(width, max_basis - m);
    for (std::int64_t c = 0; c < next; ++c) {
      if (std::fabs(r_full(c, c)) > 1e-12 * scale) continue;
      Mat fresh = gaussian_block(1);
      orthogonalise(basis, fresh);
      orthogonalise(q_w.leftCols(c), fresh);
      q_w.col(c) = fresh / fresh.norm();
      r_full.row(c).setZero();
    }

    // Convergence of the leading Ritz pairs: ||C y - theta y|| = ||R s_last||.
    const bool full = m >= max_basis;
    if (m >= next_check || full) {
      solve_projected(m);
      double worst = 0;
      for (std::int64_t i = 0; i < k; ++i) {
        const double residual = (r_full * ritz.block(j0, i, width, 1)).norm();
        worst = std::max(worst, residual / std::max(result.theta(i), 1e-300));
      }
      result.residual = worst;
      if (worst <= o.tol || full) {
        result.converged = worst <= o.tol || m == g;
        break;
      }
      std::int64_t step = std::max<std::int64_t>(b, m / 8);
      if (previous_m > 0 && worst < previous_residual && worst > 0) {
        const double rate = (std::log(worst) - std::log(previous_residual)) / static_cast<double>(m - previous_m);
        const double needed = (std::log(o.tol) - std::log(worst)) / rate;
        step = std::max<std::int64_t>(b, std::min<std::int64_t>(static_cast<std::int64_t>(needed) + 1, m / 4 + b));
      }
      previous_m = m;
      previous_residual = worst;
      next_check = m + step;
    }
    Mat grown(g, m + next);
    grown << basis, q_w.leftCols(next);
    basis.swap(grown);
    t.block(m, j0, next, width) = r_full.topRows(next);
    t.block(j0, m, width, next) = r_full.topRows(next).transpose();
  }
  result.basis_size = m;
  result.y = basis.leftCols(m) * ritz.leftCols(k);
  return result;
}

/// The k leading eigenpairs of the formed C by LAPACK (PcaSolver::dense), with
/// the largest relative residual ||C y - theta y|| / theta measured on C.
RitzPairs dense_eigenpairs(const Mat& c, const PcaOptions& o) {
  auto pairs = leading_eigenpairs(c, o.n_comps);
  RitzPairs result;
  result.theta = std::move(pairs.values);
  result.y = std::move(pairs.vectors);
  result.basis_size = c.rows();
  const Mat residuals = c * result.y - result.y * result.theta.asDiagonal();
  for (std::int64_t i = 0; i < o.n_comps; ++i)
    result.residual = std::max(result.residual, residuals.col(i).norm() / std::max(result.theta(i), 1e-300));
  result.converged = result.residual <= o.tol;
  return result;
}

}  // namespace

std::string to_string(PcaOperator op) {
  switch (op) {
    case PcaOperator::automatic: return "auto";
    case PcaOperator::gram: return "gram";
    case PcaOperator::cells: return "cells";
  }
  return "?";
}

std::string to_string(PcaSolver solver) {
  switch (solver) {
    case PcaSolver::automatic: return "auto";
    case PcaSolver::lanczos: return "lanczos";
    case PcaSolver::dense: return "dense";
  }
  return "?";
}

std::string describe_pca_method(PcaSolver solver, PcaOperator op, std::int64_t basis_size) {
  return (solver == PcaSolver::dense ? std::string("dense eigensolver")
                                     : "Lanczos basis " + std::to_string(basis_size)) +
         " on " + (op == PcaOperator::gram ? "the Gram matrix" : "the cells");
}

PcaOperator choose_pca_operator(const HostCsr& x, const PcaOptions& o) {
  if (x.cols > gram_max_features) return PcaOperator::cells;
  const auto basis = largest_basis(x.cols, o);
  const double cells = 2.0 * static_cast<double>(x.values.size()) * static_cast<double>(basis);
  return gram_multiply_adds(x.rows, x.cols) <= dense_per_sparse * cells ? PcaOperator::gram : PcaOperator::cells;
}

PcaSolver choose_pca_solver(std::int64_t features, const PcaOptions& o) {
  const auto g = static_cast<double>(features);
  const auto basis = static_cast<double>(largest_basis(features, o));
  // LAPACK's reduction to tridiagonal form against the Lanczos products C Q
  // and its two orthogonalisation passes at the largest basis.
  return 4.0 / 3.0 * g * g * g <= g * g * basis + 4.0 * g * basis * basis ? PcaSolver::dense : PcaSolver::lanczos;
}

PcaResult pca(const HostCsr& x, const PcaOptions& o) {
  const std::int64_t n = x.rows, g = x.cols;
  const std::int64_t smaller = std::min(n, g);
  if (o.n_comps < 1 || o.n_comps >= smaller)
    throw Error::option("n-comps", "must be between 1 and min(cells, features) - 1 = " +
                                       std::to_string(smaller - 1) + ", got " + std::to_string(o.n_comps));
  if (o.block_size < 1) throw Error::option("pca-block", "must be positive");
  const std::int64_t k = o.n_comps;

  PcaResult result;
  result.n_obs = n;
  result.n_features = g;
  result.n_comps = k;
  result.op = o.op == PcaOperator::automatic ? choose_pca_operator(x, o) : o.op;
  result.solver = result.op == PcaOperator::cells ? PcaSolver::lanczos
                  : o.solver == PcaSolver::automatic ? choose_pca_solver(g, o)
                                                     : o.solver;
  if (o.solver == PcaSolver::dense && result.op != PcaOperator::gram)
    throw Error::option("pca-solver", "dense needs the Gram matrix (--pca-operator gram or auto choosing it)");

  // Feature means and total variance (unbiased), as scanpy's _get_mean_var.
  CentredCells centred(x);
  const Mat moments = centred.moments();
  result.mean.resize(g);
  const auto nd = static_cast<double>(n);
  double total_variance = 0;
  for (std::int64_t j = 0; j < g; ++j) {
    result.mean[j] = moments(j, 0) / nd;
    total_variance += (moments(j, 1) / nd - result.mean[j] * result.mean[j]) * nd / (nd - 1.0);
  }
  centred.set_mean(result.mean);

  RitzPairs pairs;
  if (result.op == PcaOperator::gram) {
    const Mat c = centred.gram_matrix();
    pairs = result.solver == PcaSolver::dense ? dense_eigenpairs(c, o)
                                              : lanczos([&](const Mat& v) -> Mat { return c * v; }, g, o);
  } else {
    pairs = lanczos([&](const Mat& v) { return centred.gram_times(v); }, g, o);
  }
  result.iterations = pairs.iterations;
  result.basis_size = pairs.basis_size;
  result.converged = pairs.converged;
  result.residual = pairs.residual;

  // Components with scikit-learn's sign rule; scores A y_i.
  Mat& y = pairs.y;
  for (std::int64_t i = 0; i < k; ++i) {
    Eigen::Index at = 0;
    y.col(i).cwiseAbs().maxCoeff(&at);
    if (y(at, i) < 0) y.col(i) *= -1.0;
  }
  const Mat scores = result.op == PcaOperator::gram ? centred.times_by_tiles(y) : centred.times(y);
  result.components.resize(static_cast<std::size_t>(k * g));
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = 0; j < g; ++j) result.components[i * g + j] = y(j, i);
  result.scores.assign(scores.data(), scores.data() + n * k);
  for (std::int64_t i = 0; i < k; ++i) {
    const double s2 = std::max(pairs.theta(i), 0.0);
    result.singular_values.push_back(std::sqrt(s2));
    result.variance.push_back(s2 / (nd - 1.0));
    result.variance_ratio.push_back(total_variance > 0 ? s2 / (nd - 1.0) / total_variance : 0.0);
  }
  return result;
}

}  // namespace kotml::data
