// flowrt serve DIR: the project as a service (docs/API.md). Runs until SIGTERM or SIGINT,
// then drains: stops accepting, finishes the requests in flight, checkpoints, exits 0.
#include <csignal>
#include <cstdlib>
#include <functional>
#include <iostream>

#include "cli/commands.h"
#include "server/cluster_node.h"
#include "server/serve.h"

namespace flowrt::cli {

namespace {

// A whole number from `min` to `max`, or a usage error naming `flag`.
int parse_count(const std::string& text, const char* flag, int min, int max) {
  long long v = 0;
  const bool digits = !text.empty() && text.size() <= 9 && text.find_first_not_of("0123456789") == std::string::npos;
  if (digits) v = std::stoll(text);
  if (!digits || v < min || v > max) {
    throw UsageError{std::string(flag) + " must be a number from " + std::to_string(min) + " to " + std::to_string(max)};
  }
  return static_cast<int>(v);
}

// Waits on this thread for one of `signals` (blocked in every thread), then drains with
// `stop` and says so. Returns the exit status: 0.
int drain_on_signal(const sigset_t& signals, const std::function<void()>& stop) {
  int signal = 0;
  sigwait(&signals, &signal);
  std::cout << "flowrt serve: " << (signal == SIGTERM ? "SIGTERM" : "SIGINT") << ": draining" << std::endl;
  stop();
  std::cout << "flowrt serve: stopped" << std::endl;
  return 0;
}

}  // namespace

int serve_command(const CommandArgs& args) {
  if (args.positional.size() != 1) throw UsageError{"serve needs one DIR (a project: flows/, optionally config.json)"};
  server::ServeOptions options;
  options.dir = args.positional[0];
  options.listen = args.get("listen", options.listen);
  options.data = args.get("data");
  if (args.has("io-threads")) options.io_threads = parse_count(args.get("io-threads"), "--io-threads", 1, 64);
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
  const std::string host = options.listen.substr(0, options.listen.rfind(':'));
  if (args.has("node")) {
    // One node of a cluster on a postgresql store (docs/SCALING.md).
    server::ClusterOptions cluster;
    cluster.node = args.get("node");
    cluster.advertise = args.get("advertise");
    if (args.has("advertise") && cluster.advertise.empty()) throw UsageError{"--advertise needs HOST or HOST:PORT"};
    if (args.has("lease-ms")) cluster.lease_ms = parse_count(args.get("lease-ms"), "--lease-ms", 300, 600000);
    if (args.has("forward-timeout-ms")) {
      cluster.forward_timeout =
          std::chrono::milliseconds(parse_count(args.get("forward-timeout-ms"), "--forward-timeout-ms", 100, 3600000));
    }
    auto node = server::ClusterNode::open(options, cluster);
    if (!node) {
      for (const Diagnostic& d : node.error().list()) std::cerr << "flowrt serve: " << d.describe() << "\n";
      return 1;
    }
    std::cout << "flowrt serve: listening on " << host << ":" << (*node)->port() << " as node " << cluster.node
              << " (incarnation " << (*node)->incarnation() << ", " << ((*node)->leads() ? "leader" : "follower")
              << "); reached at " << (*node)->advertised_address() << std::endl;
    return drain_on_signal(signals, [&] { (*node)->stop(); });
  }
  if (args.has("lease-ms") || args.has("forward-timeout-ms") || args.has("advertise")) {
    throw UsageError{"--lease-ms, --forward-timeout-ms and --advertise need --node"};
  }
  auto service = server::Service::open(options);
  if (!service) {
    for (const Diagnostic& d : service.error().list()) std::cerr << "flowrt serve: " << d.describe() << "\n";
    return 1;
  }
  std::cout << "flowrt serve: listening on " << host << ":" << (*service)->port() << std::endl;
  return drain_on_signal(signals, [&] { (*service)->stop(); });
}

}  // namespace flowrt::cli
