// The engine's own log (not context records): plan compiles, flows that stop compiling,
// schedule ticks, start and shutdown. Written with spdlog to stderr under the name
// "flowrt"; the level comes from EngineOptions::log_level or FLOWRT_LOG_LEVEL (off,
// error, warn, info, debug; default warn). Thread-safe.
#pragma once

#include <spdlog/logger.h>

#include <string_view>

namespace flowrt {

spdlog::logger& engine_log();
// Sets the level; unknown names leave it unchanged and return false.
bool set_engine_log_level(std::string_view level);

}  // namespace flowrt
