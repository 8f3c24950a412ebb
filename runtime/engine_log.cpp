#include "runtime/engine_log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <memory>

namespace flowrt {

spdlog::logger& engine_log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = std::make_shared<spdlog::logger>("flowrt", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    l->set_pattern("flowrt %^%l%$: %v");
    l->set_level(spdlog::level::warn);
    if (const char* env = std::getenv("FLOWRT_LOG_LEVEL")) {
      l->set_level(spdlog::level::from_str(env));
    }
    return l;
  }();
  return *logger;
}

bool set_engine_log_level(std::string_view level) {
  if (level != "off" && level != "error" && level != "warn" && level != "info" && level != "debug" &&
      level != "trace") {
    return false;
  }
  engine_log().set_level(spdlog::level::from_str(std::string(level)));
  return true;
}

}  // namespace flowrt
