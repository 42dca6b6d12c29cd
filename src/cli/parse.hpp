#pragma once
// Command-line and INI parsing shared by every subcommand: the options each one
// has, the INI reader behind --config, and boost's notify with its errors as
// kotml::Error. Kept apart from main() so that the INI fuzzer (fuzz/) parses
// exactly what `kotml <subcommand> --config FILE` parses.

#include <boost/program_options.hpp>

#include <istream>
#include <string>
#include <vector>

#include "subcommand.hpp"

namespace kotml::cli {

/// The subcommand's own options in their sections, then the general ones
/// (--help, --config, --verbose, --quiet, --progress); its positional
/// arguments go to `positional`.
po::options_description options_of(const Subcommand& sub, po::positional_options_description& positional);

/// Reads INI text into options of one subcommand. Keys may stand at the top or
/// in a [<subcommand>] section; sections named after other subcommands are
/// skipped, so one file can configure a whole pipeline. Options already in vm
/// (the command line) win. `source` names the text in messages. Error for an
/// unknown section or option, a nested --config, or a value boost rejects.
void store_config(std::istream& in, const std::string& source, const Subcommand& sub,
                  const po::options_description& desc, const std::vector<Subcommand>& subcommands,
                  po::variables_map& vm);

/// store_config on a file, after checking that it is a regular file of at most
/// 1 MiB: a directory used to read as an empty file, and /dev/zero as an
/// endless one.
void store_config_file(const std::string& path, const Subcommand& sub, const po::options_description& desc,
                       const std::vector<Subcommand>& subcommands, po::variables_map& vm);

/// po::notify (defaults, typed values), with boost's errors as kotml::Error.
void notify_options(po::variables_map& vm);

/// Every number option given is a number, and finite unless its default is
/// infinite: NaN or inf would pass "must be positive" checks written as
/// comparisons, and a JSON record of the run writes them as null.
void require_finite_numbers(const po::variables_map& vm, const po::options_description& desc);

/// The text of a boost option error. boost 1.74's own what() replaces each
/// %placeholder% until none is left, so a value that holds "%value%" (found by
/// fuzz_config) made `kotml ot --epsilon %value%` loop forever; here every
/// placeholder is replaced once.
std::string option_error_text(const po::error& e);

}  // namespace kotml::cli
