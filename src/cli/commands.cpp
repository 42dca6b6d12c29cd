// The list of subcommands. A new subcommand adds its factory here.

#include "subcommand.hpp"

namespace kotml::cli {

Subcommand info_subcommand();
Subcommand prep_subcommand();
Subcommand simulate_subcommand();
Subcommand knn_graph_subcommand();
Subcommand apsp_subcommand();
Subcommand train_subcommand();
Subcommand train_test_subcommand();
Subcommand test_subcommand();
Subcommand distances_subcommand();
Subcommand gw_subcommand();
Subcommand ot_subcommand();
Subcommand map_subcommand();

std::vector<Subcommand> all_subcommands() {
  return {
      info_subcommand(),
      prep_subcommand(),
      simulate_subcommand(),
      knn_graph_subcommand(),
      apsp_subcommand(),
      train_subcommand(),
      train_test_subcommand(),
      test_subcommand(),
      distances_subcommand(),
      gw_subcommand(),
      ot_subcommand(),
      map_subcommand(),
  };
}

}  // namespace kotml::cli
