#include "cli/config.h"

#include <filesystem>

#include "compiler/loader.h"
#include "runtime/run_config.h"

namespace flowrt::cli {

Result<RunConfig> read_config(const std::string& path, bool must_exist) {
  RunConfig config;
  config.engine.virtual_clock = true;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (must_exist) return Error{path + ": no such file"};
    return config;
  }
  Result<std::string> text = read_file(path, 16u << 20);
  if (!text) return Error{path + ": " + text.message()};
  Result<EngineOptions> options = parse_run_config(*text, path);
  if (!options) return options.error();
  config.engine = std::move(*options);
  return config;
}

}  // namespace flowrt::cli
