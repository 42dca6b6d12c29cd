#pragma once
// The evaluation options shared by `kotml train-test` and `kotml test`.
// Header-only: only the program links Boost.Program_options.

#include <boost/program_options.hpp>

#include <cstdint>
#include <string>

#include "double_option.hpp"
#include "kotml/eval/protocol.hpp"
#include "option_groups.hpp"

namespace kotml::eval {

inline void declare_protocol_options(OptionGroups& groups) {
  namespace po = boost::program_options;
  const ProtocolOptions d;
  groups.model.add_options()
      ("n-splits", po::value<int>()->default_value(d.n_splits), "stratified train/test splits of the donors")
      ("train-size", kotml::double_option(d.train_size), "fraction of donors to train on")
      ("test-size", po::value<double>(), "fraction of donors to test on (default: the rest)")
      ("knn-k", po::value<int>()->default_value(d.knn_k), "neighbours of the kNN classifier");
}

inline ProtocolOptions protocol_options_from(const boost::program_options::variables_map& vm) {
  ProtocolOptions o;
  o.n_splits = vm["n-splits"].as<int>();
  o.train_size = vm["train-size"].as<double>();
  if (vm.count("test-size")) o.test_size = vm["test-size"].as<double>();
  o.knn_k = vm["knn-k"].as<int>();
  o.seed = vm["seed"].as<std::uint64_t>();
  if (o.n_splits < 1) throw Error::option("n-splits", "must be at least 1, got " + std::to_string(o.n_splits));
  if (o.knn_k < 1) throw Error::option("knn-k", "must be at least 1, got " + std::to_string(o.knn_k));
  split_sizes(100, o.train_size, o.test_size);  // range checks of the fractions
  return o;
}

}  // namespace kotml::eval
