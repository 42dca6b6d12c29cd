// The shared cohort options (src/cli/cohort_options.hpp): names, defaults,
// 'all' for --n-cells, and the checks every subcommand inherits.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kotml/core/error.hpp"
#include "cohort_options.hpp"

namespace po = boost::program_options;
using kotml::data::CohortOptions;

namespace {
CohortOptions parse(std::vector<std::string> args) {
  kotml::OptionGroups groups;
  po::positional_options_description positional;
  kotml::data::declare_cohort_options(groups, &positional);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(groups.input).positional(positional).run(), vm);
  po::notify(vm);
  return kotml::data::cohort_options_from(vm);
}

std::string error_of(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const kotml::Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST(CohortOptions, DefaultsAreGgmlOts) {
  const auto o = parse({"cohort.h5ad"});
  EXPECT_EQ(o.input, "cohort.h5ad");
  EXPECT_EQ(o.patient_col, "sample");
  EXPECT_EQ(o.label_col, "patient_group");
  EXPECT_EQ(o.n_cells, 250);
  EXPECT_FALSE(o.all_cells);
  EXPECT_FALSE(o.normalize);
  EXPECT_FALSE(o.keep_small_donors);
  EXPECT_EQ(o.seed, 42u);
  EXPECT_EQ(o.feature_element(), "X");
}

TEST(CohortOptions, EveryOptionIsRead) {
  const auto o = parse({"--input", "x.h5ad", "--patient-col", "donor_id", "--label-col", "disease", "--use-rep",
                        "X_pca", "--n-cells", "all", "--keep-small-donors", "--group-by", "leiden", "--normalize",
                        "--seed", "7"});
  EXPECT_EQ(o.patient_col, "donor_id");
  EXPECT_EQ(o.label_col, "disease");
  EXPECT_EQ(o.feature_element(), "obsm/X_pca");
  EXPECT_TRUE(o.all_cells);
  EXPECT_TRUE(o.keep_small_donors);
  EXPECT_EQ(o.group_by, "leiden");
  EXPECT_TRUE(o.normalize);
  EXPECT_EQ(o.seed, 7u);
  EXPECT_EQ(parse({"x.h5ad", "--layer", "counts", "--n-cells", "100"}).feature_element(), "layers/counts");
}

TEST(CohortOptions, BadValuesNameTheOption) {
  EXPECT_NE(error_of({"x.h5ad", "--n-cells", "0"}).find("--n-cells: must be positive"), std::string::npos);
  EXPECT_NE(error_of({"x.h5ad", "--n-cells", "-5"}).find("--n-cells"), std::string::npos);
  EXPECT_NE(error_of({"x.h5ad", "--n-cells", "12abc"}).find("--n-cells: must be a positive integer or 'all'"),
            std::string::npos);
  EXPECT_NE(error_of({}).find("--input"), std::string::npos);
  EXPECT_NE(error_of({"x.h5ad", "--use-rep", "X_pca", "--layer", "counts"}).find("--use-rep"), std::string::npos);
}
