// flowrt serve DIR: the project as a service (docs/API.md). Runs until SIGTERM or SIGINT,
// then drains: stops accepting, finishes the requests in flight, checkpoints, exits 0.
#include <csignal>
#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "server/serve.h"

namespace flowrt::cli {

int serve_command(const CommandArgs& args) {
  if (args.positional.size() != 1) throw UsageError{"serve needs one DIR (a project: flows/, optionally config.json)"};
  server::ServeOptions options;
  options.dir = args.positional[0];
  options.listen = args.get("listen", options.listen);
  options.data = args.get("data");
  if (args.has("io-threads")) {
    const std::string n = args.get("io-threads");
    if (n.empty() || n.size() > 2 || n.find_first_not_of("0123456789") != std::string::npos || std::stoi(n) < 1 ||
        std::stoi(n) > 64) {
      throw UsageError{"--io-threads must be a number from 1 to 64"};
    }
    options.io_threads = std::stoi(n);
  }
  // The log: --log-level, else FLOWRT_LOG_LEVEL, else info (a service says what it does).
  options.log_level = args.get("log-level");
  const std::string& level = options.log_level;
  if (args.has("log-level") && level != "off" && level != "error" && level != "warn" && level != "info" && level != "debug") {
    throw UsageError{"--log-level must be off, error, warn, info or debug"};
  }
  if (!args.has("log-level") && !std::getenv("FLOWRT_LOG_LEVEL")) options.log_level = "info";
  if (!is_project_dir(options.dir)) {
    std::cerr << "flowrt serve: " << options.dir << " is not a project (a directory holding flows/)\n";
    return 1;
  }
  // The signals are taken by sigwait below, on this thread only: block them before any
  // thread starts, so that every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  auto service = server::Service::open(options);
  if (!service) {
    for (const Diagnostic& d : service.error().list()) std::cerr << "flowrt serve: " << d.describe() << "\n";
    return 1;
  }
  std::cout << "flowrt serve: listening on " << options.listen.substr(0, options.listen.rfind(':')) << ":"
            << (*service)->port() << std::endl;
  int signal = 0;
  sigwait(&signals, &signal);
  std::cout << "flowrt serve: " << (signal == SIGTERM ? "SIGTERM" : "SIGINT") << ": draining" << std::endl;
  (*service)->stop();
  std::cout << "flowrt serve: stopped" << std::endl;
  return 0;
}

}  // namespace flowrt::cli
