#include "server/shared_stream.h"

#include <algorithm>

namespace flowrt::server {

SharedStream::SharedStream(std::shared_ptr<StreamRelay> relay, uint64_t after, uint64_t now, size_t capacity)
    : relay_(std::move(relay)), capacity_(std::max<size_t>(capacity, 1)), now_(now), base_(after), last_(after) {}

SharedStream::~SharedStream() { relay_->unsubscribe(); }

void SharedStream::take_received() const {
  for (FeedEvent& e : relay_->after(0, SIZE_MAX)) {
    if (e.id != last_ + 1) {
      // Not the next id (the leader's ring had lost some before it sent them, or it never
      // numbered them so): what the ring holds no longer runs up to this one.
      ring_.clear();
      base_ = e.id == 0 ? 0 : e.id - 1;
    }
    last_ = e.id;
    ring_.push_back(std::move(e));
    if (ring_.size() > capacity_) {
      base_ = ring_.front().id;
      ring_.pop_front();
    }
  }
}

uint64_t SharedStream::subscribe() {
  std::lock_guard lock(mu_);
  take_received();
  ++viewers_;
  return std::max(last_, now_);
}

void SharedStream::unsubscribe() {
  {
    std::lock_guard lock(mu_);
    if (--viewers_ > 0) return;
    closed_ = true;
  }
  relay_->unsubscribe();
}

std::vector<FeedEvent> SharedStream::after(uint64_t after, size_t max) const {
  std::lock_guard lock(mu_);
  take_received();
  std::vector<FeedEvent> out;
  const uint64_t known = std::max(last_, now_);
  if (after >= last_ && after <= known) return out;  // nothing new, or the leader's yet to come
  if (after < base_ || after > known) {
    // Some of what the viewer missed is not held, or it names an id never given: it must
    // reload, then follow from here.
    out.push_back(missed_reset(known));
    return out;
  }
  return held_events_after(ring_, after, max);  // the ring holds (base_, last_], and after < last_
}

bool SharedStream::ended() const {
  std::lock_guard lock(mu_);
  take_received();
  return relay_->ended();
}

bool SharedStream::open_to_viewers() const {
  std::lock_guard lock(mu_);
  return !closed_ && !relay_->upstream_ended();
}

}  // namespace flowrt::server
