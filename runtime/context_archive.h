// ContextArchive: the records of contexts that ended before this engine opened its store
// (loaded from it), and of those the engine ended while recovering. Immutable Values, by
// seq; they are read like the records of this engine's own contexts (Engine::context,
// Engine::contexts, the `flowrt run` document).
// Thread-safety: every method takes mu_; the Values handed out are immutable.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/thread_annotations.h"
#include "plans/value.h"

namespace flowrt {

class ContextArchive {
 public:
  void add(uint64_t seq, std::string flow, Value record) EXCLUDES(mu_);
  // The record of context `id` ("ctx-<seq>"), if archived.
  std::optional<Value> find(std::string_view id) const EXCLUDES(mu_);
  // (seq, record) of every archived context of `flow` ("": all), by seq.
  std::vector<std::pair<uint64_t, Value>> list(std::string_view flow = {}) const EXCLUDES(mu_);
  size_t size() const EXCLUDES(mu_);

 private:
  struct Entry {
    std::string flow;
    Value record;
  };
  mutable Mutex mu_;
  std::map<uint64_t, Entry> by_seq_ GUARDED_BY(mu_);
};

}  // namespace flowrt
