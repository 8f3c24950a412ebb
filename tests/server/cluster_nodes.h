// `flowrt serve --node` processes for the cluster's process tests
// (cluster_process_test.cpp): a blocking HTTP/1.1 client whose every step has a deadline
// (a stopped process never hangs a test), a node's process started, watched, stopped and
// killed, and what GET /api/cluster says. For tests only; not thread-safe except call().
#pragma once

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "plans/value.h"
#include "plans/value_json.h"

namespace flowrt::cluster_process_test {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

inline int64_t ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - t).count();
}

inline void pause_ms(int ms) { std::this_thread::sleep_for(milliseconds(ms)); }

// ---- a blocking HTTP/1.1 client, one connection per request, every step under a deadline

struct Answer {
  int status = 0;         // 0: no answer (refused, cut or timed out: `error` says)
  std::string body;
  std::string error;
  std::string operation;  // the X-Flowrt-Operation header
  Value json() const {
    Result<Value> v = parse_json(body);
    return v ? *v : Value();
  }
  std::string describe() const {
    if (status == 0) return "no answer (" + error + ")";
    return std::to_string(status) + " " + body.substr(0, 400);
  }
};

Answer call(uint16_t port, const std::string& method, const std::string& target, const std::string& body = "",
            int timeout_ms = 5000, const std::string& idempotency_key = "") {
  Answer a;
  const Clock::time_point deadline = Clock::now() + milliseconds(timeout_ms);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    a.error = std::string("socket: ") + std::strerror(errno);
    return a;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  // The time left as the socket's timeout for the next call; false once none is left.
  auto limit = [&](int option) {
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    timeval tv{static_cast<time_t>(left / 1000000), static_cast<suseconds_t>(left % 1000000)};
    ::setsockopt(fd, SOL_SOCKET, option, &tv, sizeof tv);
    return true;
  };
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  limit(SO_SNDTIMEO);  // connect's timeout too
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    a.error = std::string("connect: ") + std::strerror(errno);
    return a;
  }
  std::string request = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!body.empty()) request += "Content-Type: application/json\r\n";
  if (!idempotency_key.empty()) request += "Idempotency-Key: " + idempotency_key + "\r\n";
  request += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  for (size_t sent = 0; sent < request.size();) {
    if (!limit(SO_SNDTIMEO)) {
      a.error = "timed out sending";
      return a;
    }
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      a.error = std::string("send: ") + std::strerror(errno);
      return a;
    }
    sent += static_cast<size_t>(n);
  }
  std::string in;
  size_t head_end = std::string::npos;
  size_t length = std::string::npos;
  std::string head;
  char buf[16384];
  while (head_end == std::string::npos || length == std::string::npos || in.size() < head_end + length) {
    if (!limit(SO_RCVTIMEO)) {
      a.error = "timed out after " + std::to_string(timeout_ms) + " ms";
      return a;
    }
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      a.error = (errno == EAGAIN || errno == EWOULDBLOCK) ? "timed out after " + std::to_string(timeout_ms) + " ms"
                                                           : std::string("recv: ") + std::strerror(errno);
      return a;
    }
    if (n == 0) break;  // closed
    in.append(buf, static_cast<size_t>(n));
    if (head_end == std::string::npos) {
      const size_t p = in.find("\r\n\r\n");
      if (p == std::string::npos) continue;
      head_end = p + 4;
      head = in.substr(0, p + 2);
      std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
      if (const size_t cl = head.find("\r\ncontent-length:"); cl != std::string::npos) {
        length = std::strtoull(head.c_str() + cl + 17, nullptr, 10);
      }
    }
  }
  if (head_end == std::string::npos || in.size() < 12 || in.compare(0, 5, "HTTP/") != 0) {
    a.error = "the connection closed without an answer";
    return a;
  }
  if (length != std::string::npos && in.size() < head_end + length) {
    a.error = "the answer was cut short";
    return a;
  }
  if (const size_t op = head.find("\r\nx-flowrt-operation:"); op != std::string::npos) {
    const size_t from = op + 21;
    a.operation = head.substr(from, head.find("\r\n", from) - from);
    a.operation.erase(0, a.operation.find_first_not_of(' '));
  }
  a.status = std::atoi(in.c_str() + 9);
  a.body = in.substr(head_end, length);
  return a;
}

inline std::string next_cursor(const Value& next) {
  if (next.is_string()) return std::string(next.as_string());
  if (next.is_int()) return std::to_string(next.as_int());
  return "";
}

// ---- one node's process

inline std::string tail_of(const fs::path& file, size_t bytes = 3000) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  const std::string all = s.str();
  return all.size() > bytes ? "..." + all.substr(all.size() - bytes) : all;
}

struct Node {
  std::string name;
  pid_t pid = -1;
  int out = -1;       // its stdout (a pipe), open until it is reaped
  uint16_t port = 0;  // kept across restarts
  int64_t incarnation = 0;
  bool led_at_start = false;
  bool stopped = false;  // SIGSTOP
  fs::path log;          // its stderr
  int starts = 0;

  bool up() const { return pid > 0; }
};

struct ClusterSetup {
  fs::path dir;               // the project
  std::string url;            // --data
  int lease_ms = 800;         // --lease-ms
  int forward_timeout_ms = 3000;  // --forward-timeout-ms
};

// Forks `flowrt serve --node` (without waiting for it). What the child runs between fork
// and exec is async-signal-safe (the test has threads).
inline void spawn(const ClusterSetup& setup, Node& n, uint16_t port) {
  std::vector<std::string> args = {FLOWRT_BINARY,
                                   "serve",
                                   setup.dir.string(),
                                   "--data",
                                   setup.url,
                                   "--node",
                                   n.name,
                                   "--lease-ms",
                                   std::to_string(setup.lease_ms),
                                   "--forward-timeout-ms",
                                   std::to_string(setup.forward_timeout_ms),
                                   "--listen",
                                   "127.0.0.1:" + std::to_string(port),
                                   "--log-level",
                                   "warn"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log = n.log.string();
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(pipe_fds[1], 1);
    const int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (err >= 0) ::dup2(err, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  n.pid = pid;
  n.out = pipe_fds[0];
  n.stopped = false;
  ++n.starts;
}

// Its exit status (the code, or 128 + the signal) once it has exited; nullopt while it runs.
inline std::optional<int> exited(Node& n) {
  if (n.pid <= 0) return std::nullopt;
  int status = 0;
  if (::waitpid(n.pid, &status, WNOHANG) != n.pid) return std::nullopt;
  n.pid = -1;
  n.stopped = false;
  if (n.out >= 0) ::close(n.out);
  n.out = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline std::optional<int> wait_exit(Node& n, int timeout_ms) {
  const Clock::time_point start = Clock::now();
  while (true) {
    if (std::optional<int> s = exited(n)) return s;
    if (ms_since(start) > timeout_ms) return std::nullopt;
    pause_ms(10);
  }
}

inline void kill9(Node& n) {
  if (n.pid <= 0) return;
  ::kill(n.pid, SIGKILL);
  ::kill(n.pid, SIGCONT);
  int status = 0;
  ::waitpid(n.pid, &status, 0);
  n.pid = -1;
  n.stopped = false;
  if (n.out >= 0) ::close(n.out);
  n.out = -1;
}

// Reads the first line of a spawned node (where it listens): true once it did, else why
// not in *why (the process is reaped then).
inline bool await_listening(Node& n, std::string* why, int timeout_ms = 30000) {
  std::string line;
  const Clock::time_point start = Clock::now();
  while (line.find('\n') == std::string::npos) {
    const int left = timeout_ms - static_cast<int>(ms_since(start));
    if (left <= 0) {
      *why = "no line within " + std::to_string(timeout_ms) + " ms";
      kill9(n);
      return false;
    }
    pollfd p{n.out, POLLIN, 0};
    if (::poll(&p, 1, left) <= 0) continue;
    char c[256];
    const ssize_t got = ::read(n.out, c, sizeof c);
    if (got <= 0) {
      std::optional<int> s = wait_exit(n, 5000);
      if (!s) kill9(n);
      *why = "it exited (" + (s ? std::to_string(*s) : std::string("?")) + ") before it listened: " +
             tail_of(n.log, 800);
      return false;
    }
    line.append(c, static_cast<size_t>(got));
  }
  line = line.substr(0, line.find('\n'));
  // flowrt serve: listening on 127.0.0.1:PORT as node NAME (incarnation N, leader|follower); reached at ADDRESS
  const std::string on = "listening on 127.0.0.1:";
  const size_t at = line.find(on);
  const size_t inc = line.find("(incarnation ");
  if (at == std::string::npos || inc == std::string::npos) {
    *why = "unexpected first line: " + line;
    kill9(n);
    return false;
  }
  n.port = static_cast<uint16_t>(std::atoi(line.c_str() + at + on.size()));
  n.incarnation = std::atoll(line.c_str() + inc + 13);
  n.led_at_start = line.find(", leader)") != std::string::npos;
  return true;
}

// Starts a node on its port (any free one the first time). A node may exit 3 before it
// listens (it took the lead as it joined and lost it while loading the state): it is
// started again; the last try takes any free port, in case its own was taken meanwhile.
inline bool start_node(const ClusterSetup& setup, Node& n, std::string* why) {
  const uint16_t own = n.port;
  for (uint16_t port : {own, own, uint16_t{0}}) {
    spawn(setup, n, port);
    if (n.pid <= 0) {
      *why = "fork failed";
      return false;
    }
    if (await_listening(n, why)) return true;
    if (port == 0) break;
  }
  return false;
}

// ---- what the cluster says

struct View {
  bool ok = false;
  std::string role;             // the asked node's
  int64_t lead_incarnation = 0;
  bool lead_alive = false;
  int leaders = 0;              // rows with role "leader"
  std::vector<int64_t> alive;   // live incarnations
};

inline View view_of(uint16_t port) {
  View v;
  const Answer a = call(port, "GET", "/api/cluster", "", 3000);
  if (a.status != 200) return v;
  const Value j = a.json();
  v.ok = true;
  v.role = std::string(j["node"]["role"].as_string());
  v.lead_incarnation = j["lead"]["incarnation"].as_int();
  for (const Value& r : j["nodes"].items()) {
    if (r["role"] == Value("leader")) ++v.leaders;
    if (r["alive"] == Value(true)) {
      v.alive.push_back(r["incarnation"].as_int());
      if (r["incarnation"].as_int() == v.lead_incarnation) v.lead_alive = true;
    }
  }
  return v;
}

}  // namespace flowrt::cluster_process_test
