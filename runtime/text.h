// Building log lines and messages on the engine's hot paths: one allocation for the whole
// text instead of one per `+`.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace flowrt {

// The pieces, joined. Numbers go in as std::to_string(n), which stays within the small-
// string buffer.
inline std::string str_cat(std::initializer_list<std::string_view> pieces) {
  size_t size = 0;
  for (std::string_view p : pieces) size += p.size();
  std::string out;
  out.reserve(size);
  for (std::string_view p : pieces) out.append(p);
  return out;
}

}  // namespace flowrt
