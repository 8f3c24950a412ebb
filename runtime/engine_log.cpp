#include "runtime/engine_log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <memory>

namespace flowrt {
namespace {

bool known_level(std::string_view level) {
  return level == "off" || level == "error" || level == "warn" || level == "info" || level == "debug" ||
         level == "trace";
}

}  // namespace

spdlog::logger& engine_log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = std::make_shared<spdlog::logger>("flowrt", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    l->set_pattern("flowrt %^%l%$: %v");
    l->set_level(spdlog::level::warn);
    if (const char* env = std::getenv("FLOWRT_LOG_LEVEL")) {
      // spdlog reads a name it does not know as "off": a typo would silence the log.
      if (known_level(env)) {
        l->set_level(spdlog::level::from_str(env));
      } else {
        l->warn("FLOWRT_LOG_LEVEL={} is not off, error, warn, info or debug; the level stays warn", env);
      }
    }
    return l;
  }();
  return *logger;
}

bool set_engine_log_level(std::string_view level) {
  if (!known_level(level)) return false;
  engine_log().set_level(spdlog::level::from_str(std::string(level)));
  return true;
}

}  // namespace flowrt
