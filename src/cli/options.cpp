#include "options.hpp"

namespace kotml::cli {

std::string one_of(const po::variables_map& vm, const std::string& name,
                   const std::vector<std::string>& choices) {
  const auto value = vm[name].as<std::string>();
  for (const auto& c : choices)
    if (value == c) return value;
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  throw Error::option(name, "must be one of " + list + ", got '" + value + "'");
}

}  // namespace kotml::cli
