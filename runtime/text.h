// Building log lines and messages on the engine's hot paths: one allocation for the whole
// text instead of one per `+`.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace flowrt {

// Appends the pieces to `out`, growing it once. Numbers go in as std::to_string(n), which
// stays within the small-string buffer.
inline void str_append(std::string& out, std::initializer_list<std::string_view> pieces) {
  size_t size = out.size();
  for (std::string_view p : pieces) size += p.size();
  out.reserve(size);
  for (std::string_view p : pieces) out.append(p);
}

// The pieces, joined.
inline std::string str_cat(std::initializer_list<std::string_view> pieces) {
  std::string out;
  str_append(out, pieces);
  return out;
}

}  // namespace flowrt
