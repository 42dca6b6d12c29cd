// The files of `kotml map --out DIR` (see outputs.hpp).

#include "kotml/map/outputs.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <sstream>

#include "kotml/core/atomic_file.hpp"
#include "kotml/core/json_text.hpp"
#include "kotml/core/version.hpp"
#include "kotml/io/hdf5.hpp"

namespace kotml::map {
namespace {

constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string number(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

/// Reference clusters as rows, query clusters as columns, of a k_q × k_r matrix.
std::string reference_by_query_csv(const MapInput& query, const MapInput& reference,
                                   const std::vector<double>& values) {
  const auto k_q = query.n_clusters(), k_r = reference.n_clusters();
  std::ostringstream out;
  out << "reference_cluster";
  for (const auto& q : query.clusters.names) out << ',' << csv_field(q);
  out << '\n';
  for (std::int64_t y = 0; y < k_r; ++y) {
    out << csv_field(reference.clusters.names[static_cast<std::size_t>(y)]);
    for (std::int64_t x = 0; x < k_q; ++x) out << ',' << number(values[static_cast<std::size_t>(x * k_r + y)]);
    out << '\n';
  }
  return out.str();
}

void write_de_side(io::h5::File& file, const std::string& group, const DeTables& de) {
  const auto k = static_cast<std::int64_t>(de.cluster_names.size());
  const std::int64_t genes = de.n_genes;
  const auto write_tables = [&](const std::string& kind, std::int64_t rows, auto&& table_of) {
    const std::string base = group + "/" + kind + "/";
    for (const char* column : {"logfc", "p_value", "adj_p_value", "auroc"})
      file.create_dataset<double>(base + column, {rows, genes}, 4);
    std::vector<double> row(static_cast<std::size_t>(genes));
    for (std::int64_t r = 0; r < rows; ++r) {
      const DeTable* t = table_of(r);
      const bool present = t != nullptr && !t->empty();
      const auto put = [&](const char* column, auto&& value) {
        for (std::int64_t g = 0; g < genes; ++g)
          row[static_cast<std::size_t>(g)] = present ? value(static_cast<std::size_t>(g)) : not_a_number;
        file.write_row_range(base + column, r, row);
      };
      put("logfc", [&](std::size_t g) { return t->logfc[g]; });
      put("p_value", [&](std::size_t g) { return t->p_value[g]; });
      put("adj_p_value", [&](std::size_t g) { return t->adj_p_value[g]; });
      put("auroc", [&](std::size_t g) { return static_cast<double>(t->auroc[g]); });
    }
  };
  write_tables("ova", k, [&](std::int64_t r) { return &de.ova[static_cast<std::size_t>(r)]; });
  write_tables("ava", k * k, [&](std::int64_t r) -> const DeTable* {
    return r / k == r % k ? nullptr : &de.ava[static_cast<std::size_t>(r)];
  });
  std::vector<std::int64_t> skipped(de.skipped_clusters.begin(), de.skipped_clusters.end());
  file.write(group + "/skipped_clusters", skipped);
}

void write_markers(io::h5::File& file, const std::string& group, const std::vector<MarkerList>& markers) {
  std::vector<std::int64_t> offsets{0}, genes;
  std::vector<double> log_fc;
  for (const auto& list : markers) {
    genes.insert(genes.end(), list.gene.begin(), list.gene.end());
    log_fc.insert(log_fc.end(), list.log_fc.begin(), list.log_fc.end());
    offsets.push_back(static_cast<std::int64_t>(genes.size()));
  }
  file.write(group + "/offsets", offsets);
  file.write(group + "/gene", genes);
  file.write(group + "/logfc", log_fc);
}

void write_map_h5(const std::string& path, const MapInput& query, const MapInput& reference,
                  const MapPreprocessing& pre, const MapResult& result, const nlohmann::ordered_json& configuration) {
  auto file = io::h5::File::create(path);
  const std::vector<std::int64_t> clusters{query.n_clusters(), reference.n_clusters()};
  file.write("/mapping/mean", result.mapping.mean, clusters);
  file.write("/mapping/transported_mass", result.mapping.transported_mass, clusters);
  file.write("/mapping/jensen_shannon", result.mapping.jensen_shannon, clusters);
  file.write("/distance", result.distance, clusters);
  file.write("/label_distance", pre.label.distance, clusters);
  file.write_strings("/clusters/query", query.clusters.names);
  file.write_strings("/clusters/reference", reference.clusters.names);
  file.write_strings("/genes/aligned", pre.genes.names);
  std::vector<std::string> hvg;
  for (const auto h : pre.hvg) hvg.push_back(pre.genes.names[static_cast<std::size_t>(h)]);
  file.write_strings("/genes/hvg", hvg);
  write_de_side(file, "/de/query", pre.query_de);
  write_de_side(file, "/de/reference", pre.reference_de);
  write_markers(file, "/markers/query", pre.label.query_markers);
  write_markers(file, "/markers/reference", pre.label.reference_markers);
  file.write("/marginals/a", result.a);
  file.write("/marginals/b", result.b);
  file.write("/potentials/f", result.f);
  file.write("/potentials/g", result.g);
  file.write("/potentials/errors", result.report.errors);
  file.write("/transfer/label", result.transfer_label);
  file.write("/transfer/score", result.transfer_score);
  file.write_string_attribute("/", "configuration", json_text(configuration));
  file.write_string_attribute("/", "kotml_version",
                              std::string(kotml::version_string) + " (git " + kotml::git_hash + ")");
  file.write_string_attribute("/", "convention",
                              "T_ij = exp((f_i + g_j - c_ij) / epsilon), c_ij = lambda_feature/2 (1 - cos(x_i, y_j)) "
                              "+ lambda_label float32(label_distance[l_i, l_j]); matrices are query clusters x "
                              "reference clusters");
  file.write_numeric_attribute("/", "epsilon", std::vector<double>{result.report.epsilon}, true);
  file.close();
}

std::string text_file(const std::string& dir, const std::string& name, const std::string& text,
                      std::vector<std::unique_ptr<AtomicFile>>& pending) {
  pending.push_back(std::make_unique<AtomicFile>(dir + "/" + name));
  FILE* f = std::fopen(pending.back()->temporary_path().c_str(), "wb");
  if (f == nullptr) throw Error(dir + "/" + name, "", "cannot write");
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) throw Error(dir + "/" + name, "", "write failed (disk full?)");
  return pending.back()->target_path();
}

}  // namespace

nlohmann::ordered_json similar_clusters_json(const MapInput& query, const MapInput& reference,
                                             const MapResult& result, const SimilarOptions& options) {
  const auto k_r = reference.n_clusters();
  nlohmann::ordered_json out;
  out["threshold_mapping"] = options.threshold_mapping;
  out["threshold_distance"] = options.threshold_distance;
  if (options.n_top >= 0) out["n_top"] = options.n_top;
  const auto method = [&](const std::vector<std::vector<std::int64_t>>& similar, const std::vector<double>& mapping) {
    nlohmann::ordered_json by_query = nlohmann::ordered_json::object();
    for (std::size_t x = 0; x < similar.size(); ++x) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const auto y : similar[x]) {
        const auto k = x * static_cast<std::size_t>(k_r) + static_cast<std::size_t>(y);
        list.push_back({{"reference", reference.clusters.names[static_cast<std::size_t>(y)]},
                        {"mapping", mapping[k]},
                        {"distance", result.distance[k]}});
      }
      by_query[query.clusters.names[x]] = list;
    }
    return by_query;
  };
  out["mean"] = method(result.similar_mean, result.mapping.mean);
  out["jensen_shannon"] = method(result.similar_jensen_shannon, result.mapping.jensen_shannon);
  return out;
}

std::string markdown_summary(const MapInput& query, const MapInput& reference, const MapPreprocessing& pre,
                             const MapResult& result) {
  const auto k_q = query.n_clusters(), k_r = reference.n_clusters();
  std::vector<std::int64_t> cells(static_cast<std::size_t>(k_q), 0);
  for (const auto c : query.clusters.codes) ++cells[static_cast<std::size_t>(c)];
  std::ostringstream out;
  out << "# kotml map: " << query.path << " → " << reference.path << "\n\n";
  out << query.n_cells() << " query cells in " << k_q << " clusters, " << reference.n_cells() << " reference cells in "
      << k_r << " clusters; " << pre.genes.names.size() << " shared genes";
  if (!pre.hvg.empty()) out << ", " << pre.hvg.size() << " HVGs";
  out << ". Sinkhorn: " << result.report.iterations << " iterations, error "
      << (result.report.errors.empty() ? 0.0 : result.report.errors.back())
      << (result.report.converged ? " (converged)" : " (NOT converged)") << ", ε " << result.report.epsilon << ".\n\n";
  out << "| query cluster | cells | best reference match | mapping (mean) | distance | similar clusters |\n";
  out << "|---|---:|---|---:|---:|---|\n";
  char buffer[64];
  for (std::int64_t x = 0; x < k_q; ++x) {
    const double* row = result.mapping.mean.data() + x * k_r;
    std::int64_t best = 0;
    for (std::int64_t y = 1; y < k_r; ++y)
      if (row[y] > row[best]) best = y;
    out << "| " << query.clusters.names[static_cast<std::size_t>(x)] << " | " << cells[static_cast<std::size_t>(x)]
        << " | " << reference.clusters.names[static_cast<std::size_t>(best)] << " | ";
    std::snprintf(buffer, sizeof buffer, "%.3f | %.3f", row[best],
                  result.distance[static_cast<std::size_t>(x * k_r + best)]);
    out << buffer << " | ";
    const auto& similar = result.similar_mean[static_cast<std::size_t>(x)];
    if (similar.empty()) out << "—";
    for (std::size_t s = 0; s < similar.size(); ++s)
      out << (s ? ", " : "") << reference.clusters.names[static_cast<std::size_t>(similar[s])];
    out << " |\n";
  }
  return out.str();
}

void write_map_outputs(const std::string& dir, const MapInput& query, const MapInput& reference,
                       const MapPreprocessing& pre, const MapResult& result, const SimilarOptions& similar,
                       const nlohmann::ordered_json& configuration) {
  std::vector<std::unique_ptr<AtomicFile>> pending;
  text_file(dir, "mapping.csv", reference_by_query_csv(query, reference, result.mapping.mean), pending);
  text_file(dir, "distance.csv", reference_by_query_csv(query, reference, result.distance), pending);
  text_file(dir, "similar_clusters.json", json_text(similar_clusters_json(query, reference, result, similar), 1) + "\n",
            pending);
  pending.push_back(std::make_unique<AtomicFile>(dir + "/map.h5"));
  write_map_h5(pending.back()->temporary_path(), query, reference, pre, result, configuration);
  for (auto& file : pending) file->commit();
}

}  // namespace kotml::map
