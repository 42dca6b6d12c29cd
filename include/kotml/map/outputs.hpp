#pragma once
// What `kotml map --out DIR` writes, all or nothing: every file is written to a
// temporary beside its target and renamed into place only after all of them are
// complete.
//
//   mapping.csv, distance.csv   reference clusters (rows) × query clusters
//                               (columns): the mean mapping score and the
//                               block distance;
//   similar_clusters.json       per query cluster, the similar reference
//                               clusters (mean and jensen_shannon mappings);
//   map.h5                      /mapping/{mean,transported_mass,jensen_shannon},
//                               /distance, /label_distance (k_q × k_r, query rows,
//                               as pairOT's DataFrames), /clusters/{query,reference},
//                               /genes/{aligned,hvg}, /de/{query,reference}/{ova,ava}/
//                               {logfc,p_value,adj_p_value,auroc} (ova k × G, ava
//                               k·k × G with row a·k + b = a vs b; NaN where there
//                               is no table), /markers/{query,reference}/{offsets,
//                               gene} (CSR over clusters), /marginals/{a,b},
//                               /potentials/{f,g,errors} (T_ij = exp((f_i + g_j −
//                               c_ij)/ε), OTT's convention), /transfer/{label,score};
//                               attributes configuration (JSON), kotml_version,
//                               convention, epsilon.

#include <string>

#include <nlohmann/json.hpp>

#include "kotml/map/pipeline.hpp"

namespace kotml::map {

/// Rank 0 only. `configuration` is stored as map.h5's configuration attribute.
void write_map_outputs(const std::string& dir, const MapInput& query, const MapInput& reference,
                       const MapPreprocessing& pre, const MapResult& result, const SimilarOptions& similar,
                       const nlohmann::ordered_json& configuration);

/// The similar clusters as similar_clusters.json holds them.
nlohmann::ordered_json similar_clusters_json(const MapInput& query, const MapInput& reference,
                                             const MapResult& result, const SimilarOptions& options);

/// The markdown summary printed on stdout: per query cluster its best reference
/// match, mapping score and distance, and the similar clusters.
std::string markdown_summary(const MapInput& query, const MapInput& reference, const MapPreprocessing& pre,
                             const MapResult& result);

}  // namespace kotml::map
