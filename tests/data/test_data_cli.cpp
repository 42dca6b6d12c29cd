// `kotml simulate` and `kotml prep` as a user runs them: outputs that `kotml info`
// reads, and one error line with exit code 2 for bad requests, leaving no file.

#include <gtest/gtest.h>

#include <string>

#include "kotml/io/anndata.hpp"
#include "support/cli_runner.hpp"

using kotml::test::run_kotml;
using kotml::test::TempDir;

namespace {
void expect_one_error_line(const kotml::test::CliResult& r, const std::string& fragment) {
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  ASSERT_EQ(r.error_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}
}  // namespace

TEST(SimulateCli, EveryKindWritesAFileThatInfoReads) {
  TempDir dir;
  const std::pair<std::string, std::vector<std::string>> runs[] = {
      {"toy2d", {"--cells-per-mode", "20", "--noise-scale", "100"}},
      {"gmm", {"--n-donors", "4", "--cells-per-donor", "40", "--n-dim", "6"}},
      {"scrna", {"--donors-per-class", "3", "--cells-per-donor", "30", "--n-genes", "60", "--n-types", "3"}}};
  for (const auto& [kind, extra] : runs) {
    std::vector<std::string> args = {"simulate", "--kind", kind, "-o", dir.file(kind + ".h5ad"), "--seed", "5"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_kotml(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto info = run_kotml({"info", dir.file(kind + ".h5ad")});
    ASSERT_EQ(info.exit_code, 0) << info.err;
    EXPECT_NE(info.out.find("patient_group"), std::string::npos) << info.out;
  }
  const kotml::io::AnnDataReader toy(dir.file("toy2d.h5ad"));
  EXPECT_EQ(toy.n_obs(), 3 * 10 * 3 * 20);
  const kotml::io::AnnDataReader gmm(dir.file("gmm.h5ad"));
  EXPECT_EQ(gmm.n_obs(), 4 * 40);
  EXPECT_EQ(gmm.n_vars(), 6);
}

TEST(SimulateCli, SameSeedSameFileOnOneOrTwoRanks) {
  TempDir dir;
  ASSERT_EQ(run_kotml({"simulate", "--kind", "toy2d", "-o", dir.file("a.h5ad")}).exit_code, 0);
  const auto two = run_kotml({"simulate", "--kind", "toy2d", "-o", dir.file("b.h5ad")}, 2);
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const kotml::io::AnnDataReader a(dir.file("a.h5ad")), b(dir.file("b.h5ad"));
  EXPECT_EQ(a.read_dense<float>("X"), b.read_dense<float>("X"));
}

TEST(SimulateCli, BadRequestsAreOneLineExitTwo) {
  TempDir dir;
  expect_one_error_line(run_kotml({"simulate", "--kind", "mnist", "-o", dir.file("x.h5ad")}),
                        "--kind: must be one of toy2d, gmm, scrna");
  expect_one_error_line(run_kotml({"simulate", "--kind", "gmm", "--n-donors", "5", "-o", dir.file("x.h5ad")}),
                        "--n-donors");
  expect_one_error_line(
      run_kotml({"simulate", "--kind", "toy2d", "--n-genes", "5", "-o", dir.file("x.h5ad")}),
      "--n-genes: does not apply to --kind toy2d");
  expect_one_error_line(run_kotml({"simulate", "--kind", "scrna", "--n-planted-genes", "99", "--n-genes", "50", "-o",
                                   dir.file("x.h5ad")}),
                        "--n-planted-genes");
  // Absurd sizes are refused before any allocation (they ran out of memory).
  for (const auto& kind : {std::string("toy2d"), std::string("gmm"), std::string("scrna")})
    expect_one_error_line(run_kotml({"simulate", "--kind", kind, kind == "toy2d" ? "--cells-per-mode" : "--cells-per-donor",
                                     "100000000000", "-o", dir.file("x.h5ad")}),
                          "ask for fewer cells or donors");
  EXPECT_FALSE(kotml::test::file_exists(dir.file("x.h5ad")));
}

TEST(PrepCli, FixtureThenInfo) {
  TempDir dir;
  const std::string input = kotml::test::test_source_path("data/fixtures/prep_input.h5ad");
  const auto r = run_kotml({"prep", input, "-o", dir.file("p.h5ad"), "--n-top-genes", "40", "--batch-key", "batch",
                            "--n-comps", "10"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("40 highly variable genes"), std::string::npos) << r.out;
  // 300 cells x 40 genes: the Gram matrix is formed and solved densely, and the
  // output says so; the cells operator can be asked for.
  EXPECT_NE(r.out.find("(dense eigensolver on the Gram matrix, converged"), std::string::npos) << r.out;
  const auto cells = run_kotml({"prep", input, "-o", dir.file("c.h5ad"), "--n-top-genes", "40", "--batch-key",
                                "batch", "--n-comps", "10", "--pca-operator", "cells"});
  ASSERT_EQ(cells.exit_code, 0) << cells.err;
  EXPECT_NE(cells.out.find("on the cells, converged"), std::string::npos) << cells.out;
  const auto info = run_kotml({"info", dir.file("p.h5ad")});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("X_pca"), std::string::npos);
  EXPECT_NE(info.out.find("highly_variable_nbatches"), std::string::npos);
}

TEST(PrepCli, SimulatedCohortsThenInfo) {
  TempDir dir;
  // Counts: the full recipe.
  ASSERT_EQ(run_kotml({"simulate", "--kind", "scrna", "--donors-per-class", "3", "--cells-per-donor", "60",
                       "--n-genes", "120", "-o", dir.file("scrna.h5ad")})
                .exit_code,
            0);
  const auto scrna = run_kotml({"prep", dir.file("scrna.h5ad"), "-o", dir.file("scrna_prep.h5ad"), "--n-top-genes",
                                "50", "--n-comps", "10"});
  ASSERT_EQ(scrna.exit_code, 0) << scrna.err;
  const auto info = run_kotml({"info", dir.file("scrna_prep.h5ad")});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("X_pca                    dense float64, 360 x 10"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("planted"), std::string::npos);  // simulation's var columns carried over

  // Real-valued toy2d (negative coordinates): no count normalisation, no HVG,
  // PCA of its two features.
  ASSERT_EQ(run_kotml({"simulate", "--kind", "toy2d", "--cells-per-mode", "10", "-o", dir.file("toy.h5ad")}).exit_code,
            0);
  expect_one_error_line(run_kotml({"prep", dir.file("toy.h5ad"), "-o", dir.file("toy_prep.h5ad")}),
                        "normalize_total expects counts");
  const auto toy = run_kotml({"prep", dir.file("toy.h5ad"), "-o", dir.file("toy_prep.h5ad"), "--no-normalize",
                              "--no-hvg"});
  ASSERT_EQ(toy.exit_code, 0) << toy.err;
  const auto toy_info = run_kotml({"info", dir.file("toy_prep.h5ad")});
  ASSERT_EQ(toy_info.exit_code, 0) << toy_info.err;
  EXPECT_NE(toy_info.out.find("X_pca                    dense float64, 900 x 1"), std::string::npos) << toy_info.out;
}

TEST(PrepCli, BadRequestsAreOneLineExitTwoAndWriteNothing) {
  TempDir dir;
  const std::string input = kotml::test::test_source_path("data/fixtures/prep_input.h5ad");
  const std::string out = dir.file("p.h5ad");
  expect_one_error_line(run_kotml({"prep", input, "-o", out, "--n-top-genes", "500"}), "--n-top-genes");
  expect_one_error_line(run_kotml({"prep", input, "-o", out, "--batch-key", "donor"}), "obs/donor");
  expect_one_error_line(run_kotml({"prep", input, "-o", out, "--layer", "spliced"}), "layers/spliced");
  expect_one_error_line(run_kotml({"prep", input, "-o", out, "--n-comps", "0"}), "--n-comps");
  expect_one_error_line(run_kotml({"prep", input, "-o", out, "--pca-operator", "cells", "--pca-solver", "dense"}),
                        "--pca-solver");
  expect_one_error_line(run_kotml({"prep", input, "-o", out, "--pca-solver", "qr"}), "--pca-solver");
  // A floating-point option's value in six significant digits, not std::to_string's "-0.000000".
  expect_one_error_line(run_kotml({"prep", input, "-o", out, "--pca-tol", "-1e-9"}), "--pca-tol: must be positive, got -1e-09");
  expect_one_error_line(run_kotml({"prep", dir.file("missing.h5ad"), "-o", out}, 2), "missing.h5ad");
  EXPECT_FALSE(kotml::test::file_exists(out));
}

TEST(PrepCli, GlioblastomaThenInfo) {
  const std::string input = kotml::test::shared_data_path("glioblastoma_lemur.h5ad");
  if (!kotml::test::file_exists(input)) GTEST_SKIP() << "shared data file absent: " << input;
  TempDir dir;
  const auto r = run_kotml({"prep", input, "-o", dir.file("glio.h5ad"), "--n-top-genes", "100"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto info = run_kotml({"info", dir.file("glio.h5ad")});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("X_pca                    dense float64, 5000 x 50"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("counts"), std::string::npos);
}
