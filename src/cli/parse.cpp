#include "parse.hpp"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <utility>
#include <fstream>
#include <system_error>

#include "kotml/core/error.hpp"
#include "kotml/core/progress.hpp"

namespace kotml::cli {
namespace {

/// Reads the protected parts of boost's message: its template and what the
/// placeholders stand for.
struct OptionErrorParts : po::error_with_option_name {
  static const std::string& error_template(const po::error_with_option_name& e) {
    return e.*(&OptionErrorParts::m_error_template);
  }
  static const std::map<std::string, std::string>& substitutions(const po::error_with_option_name& e) {
    return e.*(&OptionErrorParts::m_substitutions);
  }
  static std::string prefix(const po::error_with_option_name& e) {
    return (e.*(&OptionErrorParts::get_canonical_option_prefix))();
  }
  static const std::map<std::string, std::pair<std::string, std::string>>& defaults(
      const po::error_with_option_name& e) {
    return e.*(&OptionErrorParts::m_substitution_defaults);
  }
};

}  // namespace

std::string option_error_text(const po::error& e) {
  const auto* named = dynamic_cast<const po::error_with_option_name*>(&e);
  if (!named) return e.what();
  // Each placeholder's text, or boost's default when it has none (an option
  // without a name reads "option '%canonical_option%'" -> "option").
  auto substitutions = OptionErrorParts::substitutions(*named);
  substitutions["canonical_option"] = named->get_option_name();
  substitutions["prefix"] = OptionErrorParts::prefix(*named);
  std::string text = OptionErrorParts::error_template(*named);
  for (const auto& [name, replacement] : OptionErrorParts::defaults(*named)) {
    const auto found = substitutions.find(name);
    if (found != substitutions.end() && !found->second.empty()) continue;
    for (auto at = text.find(replacement.first); at != std::string::npos;
         at = text.find(replacement.first, at + replacement.second.size()))
      text.replace(at, replacement.first.size(), replacement.second);
  }
  std::string result;
  for (std::size_t at = 0; at < text.size();) {
    bool replaced = false;
    if (text[at] == '%') {
      const auto end = text.find('%', at + 1);
      if (end != std::string::npos) {
        const auto found = substitutions.find(text.substr(at + 1, end - at - 1));
        if (found != substitutions.end()) {
          result += found->second;
          at = end + 1;
          replaced = true;
        }
      }
    }
    if (!replaced) result += text[at++];
  }
  return result;
}

po::options_description options_of(const Subcommand& sub, po::positional_options_description& positional) {
  po::options_description desc("Options for 'kotml " + sub.name + "'");
  po::options_description general("General");
  general.add_options()
      ("help,h", "print this help")
      ("config", po::value<std::string>(), "INI file with options; the command line wins")
      ("verbose", po::bool_switch(), "print a line to stderr for each step of the run (epochs, phases)")
      ("quiet", po::bool_switch(), "no progress on stderr (errors and warnings still print)")
      ("progress", po::bool_switch(),
       "show the updating progress line even when stderr is not a terminal (under mpirun or a batch job); "
       "otherwise such runs get a plain progress line every 5 s");
  OptionGroups groups;
  sub.declare(groups, positional);
  for (const auto* group : groups.in_order())
    if (!group->options().empty()) desc.add(*group);
  desc.add(general);
  return desc;
}

void store_config(std::istream& in, const std::string& source, const Subcommand& sub,
                  const po::options_description& desc, const std::vector<Subcommand>& subcommands,
                  po::variables_map& vm) {
  po::parsed_options raw(&desc);
  try {
    raw = po::parse_config_file(in, desc, /*allow_unregistered=*/true);
  } catch (const po::error& e) {
    throw Error(source, "", option_error_text(e));
  }
  po::parsed_options mine(&desc);
  for (auto option : raw.options) {
    std::string key = option.string_key;
    const auto dot = key.find('.');
    if (dot != std::string::npos) {
      const std::string section = key.substr(0, dot);
      if (section != sub.name) {
        bool known_section = false;
        for (const auto& other : subcommands) known_section |= (other.name == section);
        if (known_section) continue;
        throw Error(source, "[" + section + "]", "unknown section; sections are named after subcommands");
      }
      key = key.substr(dot + 1);
    }
    // An empty name ("= 1", "ot. = 1") would match every option as a prefix.
    if (key.empty()) throw Error(source, option.string_key, "a value without an option name");
    if (key == "config") throw Error(source, option.string_key, "a configuration file cannot name another one");
    if (!desc.find_nothrow(key, /*approx=*/false))
      throw Error(source, key, "unknown option for 'kotml " + sub.name + "'");
    option.string_key = key;
    option.unregistered = false;
    mine.options.push_back(option);
  }
  try {
    po::store(mine, vm);
  } catch (const po::error& e) {
    throw Error(source, "", option_error_text(e));
  }
}

void store_config_file(const std::string& path, const Subcommand& sub, const po::options_description& desc,
                       const std::vector<Subcommand>& subcommands, po::variables_map& vm) {
  constexpr std::uintmax_t largest_config = 1 << 20;
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) throw Error(path, "", "no such configuration file");
  if (!std::filesystem::is_regular_file(status))
    throw Error(path, "", "the configuration file is not a regular file (a directory, device or FIFO)");
  const auto bytes = std::filesystem::file_size(path, ec);
  if (!ec && bytes > largest_config)
    throw Error(path, "", "the configuration file has " + std::to_string(bytes) +
                              " bytes; an INI file of options is at most 1 MiB");
  std::ifstream in(path);
  if (!in) throw Error(path, "", "cannot open the configuration file");
  store_config(in, path, sub, desc, subcommands, vm);
}

void notify_options(po::variables_map& vm) {
  try {
    po::notify(vm);
  } catch (const po::error& e) {
    throw Error("", "", option_error_text(e));
  }
}

void require_finite_numbers(const po::variables_map& vm, const po::options_description& desc) {
  for (const auto& [name, value] : vm) {
    const auto* number = boost::any_cast<double>(&value.value());
    if (!number || std::isfinite(*number) || value.defaulted()) continue;
    if (std::isnan(*number)) throw Error::option(name, "must be a number, got nan");
    // Infinity is a value only where it is the default (prep's --max-disp).
    boost::any default_value;
    const auto* option = desc.find_nothrow(name, false);
    const bool infinite_default = option && option->semantic()->apply_default(default_value) &&
                                  boost::any_cast<double>(&default_value) &&
                                  std::isinf(*boost::any_cast<double>(&default_value));
    if (!infinite_default) throw Error::option(name, "must be finite, got " + log::number_text(*number));
  }
}

}  // namespace kotml::cli
