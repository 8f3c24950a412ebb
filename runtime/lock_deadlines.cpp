#include "runtime/lock_deadlines.h"

#include <algorithm>

namespace flowrt {

namespace {
// A handle's seq: the node's generation above, its index below.
uint64_t handle_seq(uint32_t generation, uint32_t index) { return (uint64_t{generation} << 32) | index; }
}  // namespace

TimerHandle LockDeadlines::add(TimeMs at, LockDeadline deadline) {
  const uint32_t index = allocate();
  Millisecond& ms = by_ms_[at];
  Node& n = nodes_[index];
  n.at = at;
  n.deadline = std::move(deadline);
  n.prev = ms.last;
  n.next = kNone;
  if (ms.last == kNone) {
    ms.first = index;
  } else {
    nodes_[ms.last].next = index;
  }
  ms.last = index;
  ++live_;
  return TimerHandle{at, handle_seq(n.generation, index)};
}

void LockDeadlines::cancel(const TimerHandle& h) {
  if (!h.valid()) return;
  const auto index = static_cast<uint32_t>(h.seq);
  if (index >= nodes_.size()) return;
  Node& n = nodes_[index];
  if (n.generation != static_cast<uint32_t>(h.seq >> 32)) return;  // spent
  if (n.prev == kNone || n.next == kNone) {  // the first or last of its millisecond
    auto ms = by_ms_.find(n.at);
    if (n.prev == kNone) ms->second.first = n.next;
    if (n.next == kNone) ms->second.last = n.prev;
    if (ms->second.first == kNone) by_ms_.erase(ms);
  }
  if (n.prev != kNone) nodes_[n.prev].next = n.next;
  if (n.next != kNone) nodes_[n.next].prev = n.prev;
  release(index);
  if (live_ == 0) give_back();
}

std::vector<LockDeadline> LockDeadlines::take_due(TimeMs now) {
  std::vector<LockDeadline> due;
  while (!by_ms_.empty() && by_ms_.begin()->first <= now) {
    for (uint32_t i = by_ms_.begin()->second.first; i != kNone;) {
      const uint32_t next = nodes_[i].next;
      due.push_back(std::move(nodes_[i].deadline));
      release(i);
      i = next;
    }
    by_ms_.erase(by_ms_.begin());
  }
  if (live_ == 0) give_back();
  return due;
}

uint32_t LockDeadlines::allocate() {
  if (!free_.empty()) {
    const uint32_t index = free_.back();
    free_.pop_back();
    return index;
  }
  nodes_.emplace_back();
  nodes_.back().generation = fresh_generation_;
  return static_cast<uint32_t>(nodes_.size() - 1);
}

void LockDeadlines::release(uint32_t index) {
  Node& n = nodes_[index];
  ++n.generation;  // every handle to it is spent now
  n.deadline = LockDeadline{};  // lets go of the context now
  n.prev = n.next = kNone;
  --live_;
  free_.push_back(index);
}

void LockDeadlines::give_back() {
  if (nodes_.size() <= kKeptNodes) return;
  for (const Node& n : nodes_) fresh_generation_ = std::max(fresh_generation_, n.generation + 1);
  std::vector<Node>().swap(nodes_);
  std::vector<uint32_t>().swap(free_);
}

}  // namespace flowrt
