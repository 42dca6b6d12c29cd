#pragma once
// The effective configuration of a run (every option after command line, INI
// file and defaults are merged) as JSON, stored in results files so that a run
// can be repeated from its output. Header-only: only the program links Boost.PO.

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "kotml/core/version.hpp"

namespace kotml::learn {

inline nlohmann::json effective_config(const boost::program_options::variables_map& vm,
                                       const std::string& subcommand, int ranks) {
  nlohmann::json options = nlohmann::json::object();
  for (const auto& [name, value] : vm) {
    if (name == "help") continue;
    const auto& any = value.value();
    if (const auto* s = boost::any_cast<std::string>(&any)) options[name] = *s;
    else if (const auto* b = boost::any_cast<bool>(&any)) options[name] = *b;
    else if (const auto* i = boost::any_cast<int>(&any)) options[name] = *i;
    else if (const auto* l = boost::any_cast<std::int64_t>(&any)) options[name] = *l;
    else if (const auto* u = boost::any_cast<std::uint64_t>(&any)) options[name] = *u;
    else if (const auto* d = boost::any_cast<double>(&any)) options[name] = *d;
  }
  return {{"subcommand", subcommand},
          {"options", options},
          {"ranks", ranks},
          {"kotml_version", version_string},
          {"git_hash", git_hash},
          {"kokkos", std::string(kokkos_cmake_version) + " (" + kokkos_backends + ")"}};
}

}  // namespace kotml::learn
