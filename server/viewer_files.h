// The web viewer's files (web/), compiled into the binary at build time by
// cmake/embed_files.cmake: nothing is read from disk or fetched at run time.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace flowrt::server {

struct ViewerFile {
  std::string_view path;  // as served: "/", "/app.js"
  const char* data;
  size_t size;
};

std::span<const ViewerFile> viewer_files();

}  // namespace flowrt::server
