#pragma once
// `kotml completion bash`: a bash completion script generated from the same
// option tables the parser uses (options_of), so it never lists an option
// that kotml does not take, nor misses one.

#include <string>
#include <vector>

#include "subcommand.hpp"

namespace kotml::cli {

/// The script: completes subcommand names after `kotml`, a subcommand's long
/// options after `-`, and file names elsewhere. Install with
///   kotml completion bash > /etc/bash_completion.d/kotml   (or source it)
std::string bash_completion(const std::vector<Subcommand>& subcommands);

}  // namespace kotml::cli
