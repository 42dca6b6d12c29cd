#pragma once
// JSON as kotml writes it. Strings that are not valid UTF-8 (a file name in a
// legacy encoding, a label read from a file) are written with U+FFFD in place of
// the bad bytes: nlohmann's default would throw, and only when the JSON is
// written, at the end of a run.

#include <nlohmann/json.hpp>

#include <string>

namespace kotml {

/// One line (indent < 0) or indented text.
template <class Json>
std::string json_text(const Json& value, int indent = -1) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kotml
