#pragma once
// The tiled Sinkhorn's options, declared once for every subcommand that solves
// an entropic problem on it (kotml ot, kotml map), so that they read alike.

#include <boost/program_options.hpp>

#include <string>

#include "option_groups.hpp"
#include "kotml/ot/tiled_sinkhorn.hpp"

namespace kotml::cli {

namespace po = boost::program_options;

/// --epsilon, --relative-epsilon, --tau-a, --tau-b, --threshold,
/// --inner-iterations, --updates, --epsilon-init, --epsilon-decay, --precision,
/// --sinkhorn-domain, --cost-storage, --online and --cost-memory (not --max-iter, whose meaning
/// differs between subcommands).
void declare_sinkhorn_options(OptionGroups& groups, const std::string& default_precision);

/// The options above and --max-iter (when given), validated.
ot::TiledSinkhornOptions sinkhorn_options(const po::variables_map& vm);

}  // namespace kotml::cli
