#include "completion.hpp"

#include <sstream>

#include "kotml/core/version.hpp"
#include "parse.hpp"

namespace kotml::cli {
namespace {

/// "--help --config ... --seed": every long option of one subcommand.
std::string long_options_of(const Subcommand& sub) {
  po::positional_options_description positional;
  const po::options_description desc = options_of(sub, positional);
  std::string words;
  for (const auto& option : desc.options()) {
    const std::string& name = option->long_name();
    if (name.empty()) continue;
    words += (words.empty() ? "--" : " --") + name;
  }
  return words;
}

}  // namespace

std::string bash_completion(const std::vector<Subcommand>& subcommands) {
  std::string names;
  for (const auto& s : subcommands) names += s.name + " ";
  std::ostringstream script;
  script << "# bash completion for kotml " << version_string << ", made by 'kotml completion bash'.\n"
         << "# Install: kotml completion bash > ~/.local/share/bash-completion/completions/kotml\n"
         << "# (or source it from ~/.bashrc).\n"
         << "_kotml() {\n"
         << "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" sub=\"\" i\n"
         << "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
         << "    case \"${COMP_WORDS[i]}\" in\n"
         << "      -*) ;;\n"
         << "      *) sub=\"${COMP_WORDS[i]}\"; break ;;\n"
         << "    esac\n"
         << "  done\n"
         << "  if [[ -z \"$sub\" ]]; then\n"
         << "    COMPREPLY=($(compgen -W \"" << names << "completion --help --version\" -- \"$cur\"))\n"
         << "    return\n"
         << "  fi\n"
         << "  local options=\"\"\n"
         << "  case \"$sub\" in\n";
  for (const auto& s : subcommands) script << "    " << s.name << ") options=\"" << long_options_of(s) << "\" ;;\n";
  script << "    completion) options=\"bash\" ;;\n"
         << "  esac\n"
         << "  if [[ \"$cur\" == -* || \"$sub\" == completion ]]; then\n"
         << "    COMPREPLY=($(compgen -W \"$options\" -- \"$cur\"))\n"
         << "  else\n"
         << "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
         << "  fi\n"
         << "}\n"
         << "complete -o filenames -F _kotml kotml\n";
  return script.str();
}

}  // namespace kotml::cli
