#pragma once
// A double-valued command-line option whose default --help shows as written.
//
// Boost.Program_options prints a double default through an ostream with 17
// significant digits, so 0.1 reads "0.10000000000000001" in --help. The
// shortest text that reads back as the same double is what a user typed.

#include <boost/program_options.hpp>

#include <charconv>
#include <string>

namespace kotml {

inline std::string shortest_text(double value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

inline boost::program_options::typed_value<double>* double_option(double default_value) {
  return boost::program_options::value<double>()->default_value(default_value,
                                                                shortest_text(default_value));
}

}  // namespace kotml
