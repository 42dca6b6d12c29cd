// The list of subcommands. A new subcommand adds its factory here.

#include "subcommand.hpp"

namespace kotml::cli {

std::vector<Subcommand> all_subcommands() {
  return {};
}

}  // namespace kotml::cli
