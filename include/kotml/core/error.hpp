#pragma once
// The one error type for problems a user can fix: bad input, bad options, a file
// that is not what it claims to be. The CLI turns it into a single line
//   kotml: error: <file>: <element>: <reason>
// and exit code 2 on every rank. Internal invariant violations are not Errors.

#include <stdexcept>
#include <string>

namespace kotml {

inline constexpr int exit_ok = 0;
inline constexpr int exit_user_error = 2;
inline constexpr int exit_internal_error = 3;

class Error : public std::runtime_error {
 public:
  /// file: the file the problem is in (may be empty, e.g. for an option);
  /// element: what inside it (an HDF5 path, a column, an option name; may be empty);
  /// reason: what is wrong, phrased so the user knows what to change.
  Error(std::string file, std::string element, std::string reason)
      : std::runtime_error(compose(file, element, reason)),
        file_(std::move(file)),
        element_(std::move(element)),
        reason_(std::move(reason)) {}

  /// An error about an option or an argument rather than a file.
  static Error option(const std::string& option_name, const std::string& reason) {
    return Error("", "--" + option_name, reason);
  }

  const std::string& file() const noexcept { return file_; }
  const std::string& element() const noexcept { return element_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  static std::string compose(const std::string& file, const std::string& element,
                             const std::string& reason) {
    std::string line;
    if (!file.empty()) line += file + ": ";
    if (!element.empty()) line += element + ": ";
    line += reason;
    // One line, whatever the parts held.
    for (char& c : line)
      if (c == '\n' || c == '\r') c = ' ';
    return line;
  }

  std::string file_;
  std::string element_;
  std::string reason_;
};

/// Throws Error(file, element, reason) unless the condition holds.
inline void require(bool condition, const std::string& file, const std::string& element,
                    const std::string& reason) {
  if (!condition) throw Error(file, element, reason);
}

}  // namespace kotml
