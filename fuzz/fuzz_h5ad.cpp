// Fuzzes the AnnData reader as `kotml info` and the cohort builder use it: an
// .h5ad image, mutated structurally (h5_image_mutator.hpp), is listed whole,
// and a cohort is built from it with donor and label columns, a representation
// and a normalisation chosen from the input's hash. Any outcome but a result
// or a kotml::Error (user error) is a bug, as is whatever the sanitizers see.

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_support.hpp"
#include "h5_image_mutator.hpp"
#include "info.hpp"
#include "kotml/data/cell_source.hpp"
#include "kotml/data/cohort.hpp"
#include "kotml/io/anndata.hpp"

namespace {

using namespace kotml;

io::AnnDataReader open(const std::uint8_t* data, std::size_t size) {
  return io::AnnDataReader(io::h5::File::open_image("fuzz.h5ad", data, size));
}

void list_everything(const std::uint8_t* data, std::size_t size) {
  const auto reader = open(data, size);
  std::ostringstream out;
  cli::print_info(out, reader, reader.obs_columns());
}

/// The largest matrix (rows × columns, read as dense rows) a cohort is built
/// from. A chunked dataset may declare 2^40 values while storing none; kotml
/// reads it as HDF5 says (fill values), which takes minutes and gigabytes, as
/// a real file that size would. That is the input's size, not a bug, and it
/// would only make the fuzzer time out.
constexpr std::int64_t max_cohort_values = std::int64_t(1) << 26;

template <class List>
std::string pick(const List& list, std::uint64_t& hash) {
  if (list.empty()) return "";
  const auto& chosen = list[hash % list.size()];
  hash /= list.size() + 1;
  return chosen;
}

void build_a_cohort(const std::uint8_t* data, std::size_t size, std::uint64_t hash) {
  auto reader = open(data, size);
  data::CohortOptions options;
  options.input = "fuzz.h5ad";
  const auto columns = reader.obs_columns();
  options.patient_col = pick(columns, hash);
  options.label_col = pick(columns, hash);
  if (options.patient_col.empty() || options.label_col.empty()) return;
  switch (hash % 4) {
    case 1: options.use_rep = pick(reader.obsm_keys(), hash); break;
    case 2: options.layer = pick(reader.layers(), hash); break;
    default: break;
  }
  hash /= 4;
  const auto matrix = reader.matrix_info(!options.use_rep.empty() ? "obsm/" + options.use_rep
                                         : !options.layer.empty() ? "layers/" + options.layer
                                                                  : "X");
  if (matrix.cols > 0 && matrix.rows > max_cohort_values / matrix.cols) return;
  options.n_cells = 1 + static_cast<std::int64_t>(hash % 7);
  options.all_cells = hash % 5 == 0;
  options.keep_small_donors = hash % 3 == 0;
  options.normalize = hash % 2 == 0;
  if (hash % 11 == 0) options.group_by = pick(columns, hash);
  options.validate();
  const data::AnnDataSource source(std::move(reader));
  const auto cohort = data::build_cohort(source, options, fuzz::world());
  (void)data::describe(cohort);
}

void fuzz_one(const std::uint8_t* data, std::size_t size) {
  fuzz::expect_only_user_errors([&] { list_everything(data, size); });
  fuzz::expect_only_user_errors([&] { build_a_cohort(data, size, fuzz::choice_hash(data, size)); });
}

}  // namespace

KOTML_HDF5_IMAGE_FUZZER(fuzz_one)
