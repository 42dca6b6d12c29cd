#pragma once
// The listing `kotml info` prints, apart from the subcommand so that the h5ad
// fuzzer (fuzz/) walks a file exactly as `kotml info` does.

#include <ostream>
#include <string>
#include <vector>

#include "kotml/io/anndata.hpp"

namespace kotml::cli {

/// What an AnnData file holds: shape, X and raw storage, layers, obsm, varm,
/// obsp, varp, uns, the obs and var frames; then each of `columns` (obs
/// columns) with its values and their counts.
void print_info(std::ostream& out, const io::AnnDataReader& reader, const std::vector<std::string>& columns);

}  // namespace kotml::cli
