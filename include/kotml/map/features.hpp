#pragma once
// Per-cell features of pairOT 0.1's cell-to-cell cost (tl/_dataset_ot.py,
// DatasetMap._preprocess_data).
//
// Rank features: for each cell, the raw counts over the HVGs are ranked across
// genes as scipy.stats.rankdata(axis=1) does (method 'average': tied values share
// the mean of their ranks, so all zeros of a cell share rank (z + 1)/2 when it
// has z zeros and no negative values), 1-based, then centred by the row mean,
// which is always (G + 1)/2 for G genes. The cosine of two such rows is the
// Spearman correlation of the cells. Values are half-integers, exact in float32
// for G < 2^23, so the float32 rows equal pairOT's (float32 with scipy >= 1.15,
// float64 with older scipy) exactly. Stored zeros tie with implicit ones. Values
// must be finite.
//
// Embedding features (--use-rep, pairOT's embedding_layer): obsm[key] rows cast to
// float32, as pairOT does, without any transform.
//
// Layout: rows × G row-major float32; row r of the output is cell row_begin + r.
// Rank features run as a Kokkos kernel, one team per cell (a per-team scratch
// copy of the cell's stored values, heap-sorted; each value's rank by binary
// search), so the result does not depend on the thread count.

#include <cstdint>
#include <string>
#include <vector>

#include "kotml/data/sparse.hpp"
#include "kotml/io/anndata.hpp"

namespace kotml::map {

/// Rank features of rows [row_begin, row_end) of counts (cells × HVGs).
/// Error when the range is not inside the matrix.
std::vector<float> rank_features(const data::HostCsr& counts, std::int64_t row_begin, std::int64_t row_end);

/// Every row.
inline std::vector<float> rank_features(const data::HostCsr& counts) {
  return rank_features(counts, 0, counts.rows);
}

/// Rows [row_begin, row_end) of obsm/<key> as float32. Error naming the file and
/// element when it is missing, not a dense matrix, or holds NaN or infinity.
std::vector<float> embedding_features(const io::AnnDataReader& reader, const std::string& key,
                                      std::int64_t row_begin, std::int64_t row_end);

}  // namespace kotml::map
