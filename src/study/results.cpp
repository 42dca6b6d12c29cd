#include "kotml/study/results.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <filesystem>

#include "kotml/core/atomic_file.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/json_text.hpp"
#include "kotml/core/version.hpp"
#include "kotml/stage/projection.hpp"
#include "kotml/io/anndata.hpp"
#include "kotml/io/hdf5.hpp"

namespace kotml::study {
namespace {

template <class T, class Field>
std::vector<T> column(const std::vector<learn::EpochRecord>& history, Field field) {
  std::vector<T> values;
  for (const auto& r : history) values.push_back(static_cast<T>(r.*field));
  return values;
}

void write_history(io::h5::File& file, const std::string& group, const std::vector<learn::EpochRecord>& h) {
  file.create_group(group);
  file.write(group + "/epoch", column<std::int64_t>(h, &learn::EpochRecord::epoch));
  file.write(group + "/loss", column<double>(h, &learn::EpochRecord::loss));
  file.write(group + "/regularizer", column<double>(h, &learn::EpochRecord::regularizer));
  file.write(group + "/grad_norm", column<double>(h, &learn::EpochRecord::grad_norm));
  file.write(group + "/min_grad_norm", column<double>(h, &learn::EpochRecord::min_grad_norm));
  file.write(group + "/seconds", column<double>(h, &learn::EpochRecord::seconds));
  file.write(group + "/cpu_seconds", column<double>(h, &learn::EpochRecord::cpu_seconds));
  file.write(group + "/steps", column<std::int64_t>(h, &learn::EpochRecord::steps));
  file.write(group + "/triplets", column<std::int64_t>(h, &learn::EpochRecord::triplets));
  file.write(group + "/active_triplets", column<std::int64_t>(h, &learn::EpochRecord::active_triplets));
}

void write_matrix(io::h5::File& file, const std::string& name, const learn::MetricMatrix& a) {
  file.write(name, std::vector<double>(a.data(), a.data() + a.size()),
             {static_cast<std::int64_t>(a.extent(0)), static_cast<std::int64_t>(a.extent(1))});
}

/// anndata's array encoding, so that anndata reads the element back.
void mark_array(io::h5::File& file, const std::string& name) {
  file.write_string_attribute(name, "encoding-type", "array");
  file.write_string_attribute(name, "encoding-version", "0.2.0");
}

void ensure_dict(io::h5::File& file, const std::string& group) {
  if (!file.exists(group)) {
    file.create_group(group);
    file.write_string_attribute(group, "encoding-type", "dict");
    file.write_string_attribute(group, "encoding-version", "0.1.0");
  }
}

}  // namespace

std::vector<std::string> loading_gene_names(const data::Cohort& cohort) {
  if (!cohort.gene_loadings.empty()) return cohort.gene_names;
  return cohort.feature_names;
}

std::vector<double> metric_loadings(const data::Cohort& cohort, const learn::MetricMatrix& a) {
  const auto names = loading_gene_names(cohort);
  return learn::gene_loadings(a, cohort.gene_loadings, static_cast<std::int64_t>(names.size()));
}

void write_results(const std::string& path, const data::Cohort& cohort, const RunRecord& run) {
  AtomicFile target(path);
  {
    auto file = io::h5::File::create(target);
    if (run.a.size() > 0) {
      const auto k = static_cast<std::int64_t>(run.a.extent(0));
      write_matrix(file, "A", run.a);
      file.write_strings("features", cohort.feature_names);
      const auto genes = loading_gene_names(cohort);
      const auto n_genes = static_cast<std::int64_t>(genes.size());
      const auto loadings = metric_loadings(cohort, run.a);
      file.write("loadings/values", loadings, {n_genes, k});
      file.write_strings("loadings/genes", genes);
      const auto top = std::min(run.top_genes, n_genes);
      const auto index = learn::top_genes(loadings, n_genes, k, top);
      file.write("top_genes/index", index, {k, top});
      std::vector<std::string> names;
      for (auto g : index) names.push_back(genes[static_cast<std::size_t>(g)]);
      file.write_strings("top_genes/names", names);
      file.write_numeric_attribute("top_genes/names", "shape", std::vector<std::int64_t>{k, top});
      write_history(file, "history", run.history);
    }
    for (std::size_t s = 0; s < run.splits.size(); ++s) {
      const std::string group = "splits/" + std::to_string(s);
      write_matrix(file, group + "/A", run.splits[s].a);
      write_history(file, group + "/history", run.splits[s].history);
      file.write_strings(group + "/train_donors", run.splits[s].train_donors);
      file.write_strings(group + "/test_donors", run.splits[s].test_donors);
    }
    if (!run.metrics.empty()) {
      std::vector<double> knn, mi, ari, vi, time;
      std::vector<std::int64_t> n_train, n_test;
      for (const auto& m : run.metrics) {
        knn.push_back(m.knn_acc);
        mi.push_back(m.mi);
        ari.push_back(m.ari);
        vi.push_back(m.vi);
        time.push_back(m.epoch_time_s ? *m.epoch_time_s : std::nan(""));
        n_train.push_back(m.n_train);
        n_test.push_back(m.n_test);
      }
      file.write("metrics/knn_acc", knn);
      file.write("metrics/mi", mi);
      file.write("metrics/ari", ari);
      file.write("metrics/vi", vi);
      file.write("metrics/epoch_time_s", time);
      std::vector<double> cpu, test_loss;
      for (const auto& m : run.metrics) {
        cpu.push_back(m.epoch_cpu_s ? *m.epoch_cpu_s : std::nan(""));
        test_loss.push_back(m.test_loss ? *m.test_loss : std::nan(""));
      }
      file.write("metrics/epoch_cpu_s", cpu);
      file.write("metrics/test_loss", test_loss);
      file.write("metrics/n_train", n_train);
      file.write("metrics/n_test", n_test);
    }
    if (!run.summary.is_null()) file.write_string("metrics/summary_json", json_text(run.summary));
    file.write_string_attribute("/", "config", json_text(run.config));
    file.write_string_attribute("/", "subcommand", run.subcommand);
    file.write_string_attribute("/", "kotml_version", version_string);
    file.write_string_attribute("/", "git_hash", git_hash);
    file.write_string_attribute("/", "kokkos", std::string(kokkos_cmake_version) + " (" + kokkos_backends + ")");
    file.close();
  }
  target.commit();
}

learn::MetricMatrix read_metric(const std::string& path) {
  auto file = io::h5::File::open_read(path);
  if (!file.is_dataset("A")) throw Error(path, "A", "no learned metric in this file (expected a kotml results.h5)");
  const auto shape = file.shape("A");
  if (shape.size() != 2 || shape[0] < 1 || shape[1] < 1) throw Error(path, "A", "expected a non-empty 2-D matrix");
  const auto values = file.read<double>("A");
  learn::MetricMatrix a("metric_A", static_cast<std::size_t>(shape[0]), static_cast<std::size_t>(shape[1]));
  std::copy(values.begin(), values.end(), a.data());
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!std::isfinite(a.data()[i])) throw Error(path, "A", "the metric has non-finite entries");
  return a;
}

void write_annotated_h5ad(const std::string& output, const data::Cohort& cohort, const learn::MetricMatrix& a) {
  if (cohort.source.empty()) throw Error::option("write-h5ad", "needs a cohort read from an .h5ad file");
  const auto k = static_cast<std::int64_t>(a.extent(0));
  const auto d = static_cast<std::int64_t>(a.extent(1));
  AtomicFile target(output);
  std::error_code ec;
  std::filesystem::copy_file(cohort.source, target.temporary_path(), std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) throw Error(output, "", "cannot copy the input: " + ec.message());
  const io::AnnDataReader reader(cohort.source);
  const auto n_obs = reader.n_obs();
  // X_ggml of every cell, block by block so that X is never densified whole.
  std::vector<double> embedding(static_cast<std::size_t>(n_obs * k));
  const auto a_device = stage::metric_to_device(a);
  const std::int64_t block = 4096;
  for (std::int64_t first = 0; first < n_obs; first += block) {
    const std::int64_t last = std::min(n_obs, first + block);
    std::vector<std::int64_t> rows;
    for (auto r = first; r < last; ++r) rows.push_back(r);
    const auto x = reader.read_rows<float>(cohort.feature_element, rows);
    if (static_cast<std::int64_t>(x.size()) != (last - first) * d)
      throw Error(cohort.source, cohort.feature_element, "feature matrix does not match the metric's width");
    Matrix<float> x_device(no_init("kotml::learn::x_block"), static_cast<std::size_t>(last - first), static_cast<std::size_t>(d));
    Kokkos::deep_copy(x_device, Kokkos::View<const float**, Kokkos::LayoutRight, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                    x.data(), static_cast<std::size_t>(last - first), static_cast<std::size_t>(d)));
    Matrix<double> z(no_init("kotml::learn::z_block"), static_cast<std::size_t>(last - first), static_cast<std::size_t>(k));
    stage::project_rows(x_device, a_device, z);
    auto z_host = Kokkos::create_mirror_view_and_copy(HostSpace(), z);
    std::copy(z_host.data(), z_host.data() + z_host.size(), embedding.begin() + first * k);
  }
  {
    auto file = io::h5::File::open_rw(target.temporary_path());
    ensure_dict(file, "uns");
    ensure_dict(file, "varm");
    ensure_dict(file, "obsm");
    write_matrix(file, "uns/W_ggml", a);
    mark_array(file, "uns/W_ggml");
    // varm needs one row per var: gene loadings when the features are genes or
    // map back to genes; otherwise (an embedding without a map) only uns, as GGML-OT.
    const auto genes = loading_gene_names(cohort);
    if (static_cast<std::int64_t>(genes.size()) == reader.n_vars()) {
      file.write("varm/W_ggml", metric_loadings(cohort, a), {reader.n_vars(), k});
      mark_array(file, "varm/W_ggml");
    }
    file.write("obsm/X_ggml", embedding, {n_obs, k});
    mark_array(file, "obsm/X_ggml");
    file.close();
  }
  target.commit();
}

}  // namespace kotml::study
