#include "server/relay_io.h"

#include <pthread.h>

namespace flowrt::server {

RelayIo::RelayIo() : work_(io_.get_executor()) {}

std::shared_ptr<RelayIo> RelayIo::start() {
  std::shared_ptr<RelayIo> r(new RelayIo());
  RelayIo* self = r.get();
  r->thread_ = std::thread([self] {
    pthread_setname_np(pthread_self(), "flowrt-relay");
    self->io_.run();
  });
  return r;
}

RelayIo::~RelayIo() { stop(); }

void RelayIo::stop() {
  std::lock_guard lock(stop_mu_);
  if (stopped_.load(std::memory_order_acquire)) return;
  work_.reset();
  io_.stop();
  if (thread_.joinable()) thread_.join();
  stopped_.store(true, std::memory_order_release);
}

}  // namespace flowrt::server
