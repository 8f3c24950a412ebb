// ContextArchive: the records of contexts that the engine ended while opening or recovering
// its store (they never ran in this engine), until the store has them: each leaves once
// the batch holding its record is durable (the journal calls remove), and is read from the
// store after that. Immutable Values, by seq; they are read like the records of this
// engine's own contexts (Engine::context, Engine::contexts, the `flowrt run` document).
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
  void remove(uint64_t seq) EXCLUDES(mu_);
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
