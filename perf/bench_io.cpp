// io timings on a CSR cohort file: 100,000 cells x 2,000 genes, 60 non-zeros
// per cell (6 M values, ~50 MB), 100 donors whose cells lie in 20 blocks of 50
// rows spread over the file (as after concatenating batches). The file is
// written once by kotml's writer, or taken from KOTML_BENCH_IO_FILE (any .h5ad
// with a CSR X and an obs column named by KOTML_BENCH_IO_DONOR, default "donor";
// perf/io/compare_io.py uses this to time kotml and anndata on one file).
//
//   BM_DonorRowsDense     one donor's cells as a dense float matrix (read_rows)
//   BM_DonorRowsCsr       one donor's cells as CSR (read_csr_rows)
//   BM_WholeMatrixCsr     the whole matrix as CSR (what reading a donor must not cost)
//   BM_ObsLabels          the donor column decoded to one label per cell
//   BM_OpenWithVerify     opening the file, including the verification walk
//   BM_WriteCsr/cells     write_anndata of the first `cells` rows
//   BM_ReadFloat64As<T>   a float64 dataset of 16 Mi values read as T: float32 goes
//                         through HDF5's conversion with kotml's overflow-counting
//                         callback, float64 is the plain read it is compared with
//
// Items per second count cells; bytes per second count the values and indices read.

#include <benchmark/benchmark.h>
#include <sys/stat.h>
#include <utime.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kotml/io/anndata.hpp"
#include "kotml/io/hdf5.hpp"

namespace {

using kotml::io::AnnDataContent;
using kotml::io::AnnDataReader;

constexpr std::int64_t n_cells = 100000, n_genes = 2000, per_cell = 60, n_donors = 100, block = 50;

AnnDataContent synthetic_cohort(std::int64_t cells) {
  AnnDataContent c;
  c.n_obs = cells;
  c.n_vars = n_genes;
  c.x_is_sparse = true;
  auto& x = c.x_csr;
  x.rows = cells;
  x.cols = n_genes;
  x.indptr.reserve(static_cast<std::size_t>(cells) + 1);
  x.indptr.push_back(0);
  std::uint64_t state = 0x9e3779b97f4a7c15ULL;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (std::int64_t i = 0; i < cells; ++i) {
    // 60 distinct sorted columns: a random start and a random stride coprime-ish to 2000.
    const std::int64_t start = static_cast<std::int64_t>(next() % n_genes);
    const std::int64_t stride = 1 + static_cast<std::int64_t>(next() % 31);
    std::vector<std::int64_t> cols;
    for (std::int64_t k = 0; k < per_cell; ++k) cols.push_back((start + k * stride) % n_genes);
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    for (auto j : cols) {
      x.indices.push_back(j);
      x.values.push_back(static_cast<float>(1 + next() % 20));
    }
    x.indptr.push_back(static_cast<std::int64_t>(x.values.size()));
  }
  kotml::io::Column donor;
  donor.name = "donor";
  donor.kind = kotml::io::ColumnKind::categorical;
  for (std::int64_t d = 0; d < n_donors; ++d) donor.categories.push_back("donor" + std::to_string(d));
  for (std::int64_t i = 0; i < cells; ++i) donor.codes.push_back(static_cast<std::int32_t>((i / block) % n_donors));
  c.obs_columns.push_back(donor);
  return c;
}

struct Cohort {
  std::string path;
  bool owned = false;
  std::unique_ptr<AnnDataReader> reader;
  std::vector<std::vector<std::int64_t>> donor_rows;
  std::int64_t nnz = 0;
  ~Cohort() {
    reader.reset();
    if (owned) std::filesystem::remove(path);
  }
};

Cohort& cohort() {
  static Cohort c;
  if (c.path.empty()) {
    if (const char* given = std::getenv("KOTML_BENCH_IO_FILE")) {
      c.path = given;
    } else {
      c.path = (std::filesystem::temp_directory_path() / "kotml_bench_io.h5ad").string();
      c.owned = true;
      kotml::io::write_anndata(c.path, synthetic_cohort(n_cells));
    }
  }
  if (!c.reader) {
    c.reader = std::make_unique<AnnDataReader>(c.path);
    const char* column = std::getenv("KOTML_BENCH_IO_DONOR");
    const auto donor = c.reader->obs(column ? column : "donor");
    c.donor_rows.assign(donor.categories.size(), {});
    for (std::size_t i = 0; i < donor.codes.size(); ++i)
      if (donor.codes[i] >= 0) c.donor_rows[static_cast<std::size_t>(donor.codes[i])].push_back(static_cast<std::int64_t>(i));
    c.nnz = c.reader->matrix_info("X").nnz;
  }
  return c;
}

void BM_DonorRowsDense(benchmark::State& state) {
  auto& c = cohort();
  std::size_t d = 0, cells = 0;
  for (auto _ : state) {
    const auto& rows = c.donor_rows[d++ % c.donor_rows.size()];
    auto dense = c.reader->read_rows<float>("X", rows);
    benchmark::DoNotOptimize(dense.data());
    cells += rows.size();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(cells));
}
BENCHMARK(BM_DonorRowsDense)->Unit(benchmark::kMillisecond);

void BM_DonorRowsCsr(benchmark::State& state) {
  auto& c = cohort();
  std::size_t d = 0, cells = 0, values = 0;
  for (auto _ : state) {
    const auto& rows = c.donor_rows[d++ % c.donor_rows.size()];
    auto csr = c.reader->read_csr_rows<float>("X", rows);
    benchmark::DoNotOptimize(csr.values.data());
    cells += rows.size();
    values += csr.values.size();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(cells));
  state.SetBytesProcessed(static_cast<std::int64_t>(values * (sizeof(float) + sizeof(std::int32_t))));
}
BENCHMARK(BM_DonorRowsCsr)->Unit(benchmark::kMillisecond);

void BM_WholeMatrixCsr(benchmark::State& state) {
  auto& c = cohort();
  for (auto _ : state) {
    auto csr = c.reader->read_csr<float>("X");
    benchmark::DoNotOptimize(csr.values.data());
  }
  state.SetItemsProcessed(state.iterations() * c.reader->n_obs());
  state.SetBytesProcessed(state.iterations() * c.nnz * static_cast<std::int64_t>(sizeof(float) + sizeof(std::int32_t)));
}
BENCHMARK(BM_WholeMatrixCsr)->Unit(benchmark::kMillisecond);

void BM_ObsLabels(benchmark::State& state) {
  auto& c = cohort();
  const char* column = std::getenv("KOTML_BENCH_IO_DONOR");
  for (auto _ : state) {
    auto labels = c.reader->obs(column ? column : "donor").as_strings();
    benchmark::DoNotOptimize(labels.data());
  }
  state.SetItemsProcessed(state.iterations() * c.reader->n_obs());
}
BENCHMARK(BM_ObsLabels)->Unit(benchmark::kMillisecond);

void BM_OpenWithVerify(benchmark::State& state) {
  auto& c = cohort();
  long tick = 0;
  for (auto _ : state) {
    state.PauseTiming();
    // A new modification time makes the verification cache treat it as a new file.
    struct utimbuf times;
    times.actime = times.modtime = 1700000000 + (++tick);
    ::utime(c.path.c_str(), &times);
    state.ResumeTiming();
    AnnDataReader r(c.path);
    benchmark::DoNotOptimize(r.n_obs());
  }
}
BENCHMARK(BM_OpenWithVerify)->Unit(benchmark::kMillisecond);

void BM_WriteCsr(benchmark::State& state) {
  const auto content = synthetic_cohort(state.range(0));
  const std::string path = (std::filesystem::temp_directory_path() / "kotml_bench_io_write.h5ad").string();
  for (auto _ : state) kotml::io::write_anndata(path, content);
  std::filesystem::remove(path);
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(content.x_csr.values.size()) *
                          static_cast<std::int64_t>(sizeof(float) + sizeof(std::int32_t)));
}
BENCHMARK(BM_WriteCsr)->Arg(20000)->Unit(benchmark::kMillisecond);

/// 16 Mi float64 values read as T; the argument is the gzip level they are
/// written with (0: contiguous, HDF5 converts; else chunks inflated and
/// converted on the host threads).
template <class T>
void BM_ReadFloat64As(benchmark::State& state) {
  constexpr std::int64_t n = std::int64_t(1) << 24;
  const std::string path = (std::filesystem::temp_directory_path() / "kotml_bench_io_float64.h5").string();
  {
    std::vector<double> values(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) values[static_cast<std::size_t>(i)] = 1e-3 * static_cast<double>(i % 100003);
    auto file = kotml::io::h5::File::create(path);
    file.write<double>("x", values, {n}, static_cast<int>(state.range(0)));
    file.close();
  }
  const auto file = kotml::io::h5::File::open_read(path);
  for (auto _ : state) benchmark::DoNotOptimize(file.read<T>("x"));
  std::filesystem::remove(path);
  state.SetItemsProcessed(state.iterations() * n);
  state.SetBytesProcessed(state.iterations() * n * static_cast<std::int64_t>(sizeof(double)));
}
BENCHMARK_TEMPLATE(BM_ReadFloat64As, float)->Arg(0)->Arg(4)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_ReadFloat64As, double)->Arg(0)->Arg(4)->Unit(benchmark::kMillisecond);

}  // namespace
