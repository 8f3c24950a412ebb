#include "runtime/context_reads.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "runtime/engine_core.h"
#include "runtime/engine_log.h"
#include "store/store.h"

namespace flowrt {
namespace {

// A page of history read at a time.
constexpr size_t kPage = 1000;

// The store's history is read only with a journal (a durable store); a memory store's
// contexts all live in the engine.
Store* history(const EngineCore& core) { return core.journal ? core.store.get() : nullptr; }

// A context in memory's record: its own, or, when it rests, its row's (written with the
// checkpoint of the wait it rests in, the record as it then stood).
Value live_record(const EngineCore& core, const Context& c, size_t limit) {
  if (std::optional<Value> own = c.to_value_unless_resting(limit)) return std::move(*own);
  Result<std::optional<StoredContext>> stored = core.store->load_context(c.seq);
  if (stored && *stored) {
    if (Value record = (*stored)->record.value(); record.is_object()) return record;
  }
  engine_log().error("{}: reading resting context {}: {}", core.store->describe(), c.id.as_string(),
                     stored ? std::string("its row holds no record") : stored.message());
  return c.to_value(limit);  // what is left in memory: without its steps
}

Value memory_record(const EngineCore& core, const KeptContext& c, size_t limit) {
  return c.live() ? live_record(core, *c.live(), limit) : c.frozen()->to_value(limit);
}

}  // namespace

std::optional<Value> read_context_record(const EngineCore& core, std::string_view id) {
  if (const KeptContext c = core.contexts.find(id)) return memory_record(core, c, core.props().record_value_limit);
  if (std::optional<Value> archived = core.archive.find(id)) return archived;
  Store* store = history(core);
  const std::optional<uint64_t> seq = context_seq_of(id);
  if (!store || !seq) return std::nullopt;
  Result<std::optional<StoredContext>> stored = store->load_context(*seq);
  if (!stored) {
    engine_log().error("{}: reading context {}: {}", store->describe(), id, stored.message());
    return std::nullopt;
  }
  // Only an ended one: one that has not ended is in memory (or not started yet).
  if (!*stored || !is_final_context_status((*stored)->status)) return std::nullopt;
  Value record = (*stored)->record.value();
  if (!record.is_object()) return std::nullopt;
  return record;
}

std::vector<Value> read_context_records(const EngineCore& core, std::string_view flow) {
  const size_t limit = core.props().record_value_limit;
  // (seq, source, record): memory 0, archive 1, store 2; the lowest source wins a seq.
  struct Entry {
    uint64_t seq;
    int source;
    Value record;
  };
  std::vector<Entry> all;
  // Memory first, the store last: see the header.
  core.contexts.for_each([&](const KeptContext& c) {
    if (flow.empty() || c.flow()->id == flow) all.push_back(Entry{c.seq(), 0, memory_record(core, c, limit)});
  });
  for (auto& [seq, record] : core.archive.list(flow)) all.push_back(Entry{seq, 1, std::move(record)});
  if (Store* store = history(core)) {
    ContextQuery q;
    q.flow = std::string(flow);
    q.ended_only = true;
    q.limit = kPage;
    while (true) {
      Result<std::vector<StoredContext>> page = store->list_contexts(q);
      if (!page) {
        engine_log().error("{}: reading contexts: {}", store->describe(), page.message());
        break;
      }
      if (page->empty()) break;
      q.after_seq = page->back().seq;
      for (StoredContext& c : *page) {
        if (Value record = c.record.value(); record.is_object()) all.push_back(Entry{c.seq, 2, std::move(record)});
      }
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) {
    return a.seq != b.seq ? a.seq < b.seq : a.source < b.source;
  });
  std::vector<Value> out;
  out.reserve(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    if (i > 0 && all[i].seq == all[i - 1].seq) continue;
    out.push_back(std::move(all[i].record));
  }
  return out;
}

std::vector<Value> read_unfinished_records(const EngineCore& core, uint64_t before_seq, size_t limit) {
  std::vector<Value> out;
  if (limit == 0 || before_seq <= 1) return out;
  const size_t value_limit = core.props().record_value_limit;
  core.contexts.for_each_newest_first(before_seq, [&](const KeptContext& c) {
    if (!c.finished()) out.push_back(live_record(core, *c.live(), value_limit));
    return out.size() < limit;
  });
  return out;
}

std::vector<Value> read_context_page(const EngineCore& core, std::string_view flow, std::string_view status,
                                     uint64_t before_seq, size_t limit) {
  if (limit == 0 || before_seq <= 1) return {};
  const size_t value_limit = core.props().record_value_limit;
  struct Entry {
    uint64_t seq;
    int source;  // memory 0, archive 1, store 2: the lowest wins a seq
    KeptContext kept;
    Value record;
  };
  std::vector<Entry> all;
  auto status_of = [](const KeptContext& c) {
    return status_name(c.live() ? c.live()->status() : c.frozen()->status());
  };
  // Only the newest `limit` of memory can be on the page.
  core.contexts.for_each_newest_first(before_seq, [&](const KeptContext& c) {
    if (!flow.empty() && c.flow()->id != flow) return true;
    if (!status.empty() && status_of(c) != status) return true;
    all.push_back(Entry{c.seq(), 0, c, Value()});
    return all.size() < limit;
  });
  auto newest = [](const Entry& a, const Entry& b) { return a.seq != b.seq ? a.seq > b.seq : a.source < b.source; };
  for (auto& [seq, record] : core.archive.list(flow)) {
    if (seq >= before_seq) continue;
    if (!status.empty() && record["status"].as_string() != status) continue;
    all.push_back(Entry{seq, 1, KeptContext(), std::move(record)});
  }
  if (Store* store = history(core)) {
    Result<std::vector<StoredContext>> page = store->list_contexts(newest_ended_page(flow, status, before_seq, limit));
    if (!page) {
      engine_log().error("{}: reading contexts: {}", store->describe(), page.message());
    } else {
      for (StoredContext& c : *page) {
        if (Value record = c.record.value(); record.is_object()) {
          all.push_back(Entry{c.seq, 2, KeptContext(), std::move(record)});
        }
      }
    }
  }
  std::sort(all.begin(), all.end(), newest);
  std::vector<Value> out;
  for (size_t i = 0; i < all.size() && out.size() < limit; ++i) {
    if (i > 0 && all[i].seq == all[i - 1].seq) continue;
    out.push_back(all[i].source == 0 ? memory_record(core, all[i].kept, value_limit) : std::move(all[i].record));
  }
  return out;
}

}  // namespace flowrt
