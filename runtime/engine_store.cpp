// EngineCore and its durable store: opening it and taking its state in, the journal that
// every change goes through, and how long operations from outside wait for it
// (docs/DURABILITY.md). recover() is in engine_recovery.cpp.
#include <string>
#include <utility>

#include "plans/time.h"
#include "runtime/commit.h"
#include "runtime/engine.h"
#include "runtime/engine_core.h"
#include "runtime/engine_log.h"
#include "runtime/keyed_writes.h"
#include "runtime/stored_context.h"

namespace flowrt {

Status EngineCore::open_store() {
  StoreOptions so;
  so.kind = options.store.empty() ? "memory" : options.store;
  so.path = options.data_file;
  so.url = options.store_url;
  so.lead_epoch = options.store_lead_epoch;
  so.sync = sync_mode_of(props().durability);
  so.report = [](const std::string& message) { engine_log().warn("{}", message); };
  Result<std::unique_ptr<Store>> opened = ::flowrt::open_store(so);
  if (!opened) {
    store_status_ = opened.error();
    return store_status_;
  }
  store = std::move(opened).value();
  if (!store->durable()) return Status::ok();
  if (const std::string note = store->open_note(); !note.empty()) engine_log().warn("{}: {}", store->describe(), note);
  // Contexts are not loaded here: recover() pages through them, so that at no time are all
  // of them in memory twice (as rows and as contexts).
  Result<StoredState> loaded = store->load(/*with_contexts=*/false);
  if (!loaded) {
    store_status_ = loaded.error();
    return store_status_;
  }
  StoredState& state = *loaded;
  StoreCounters counters;
  counters.sys_id_seed = options.seed;
  if (!state.fresh) {
    counters = state.counters;
    if (clock.is_virtual() && state.counters.clock >= 0) clock.restore(clamp_time(state.counters.clock));
    MutexLock lock(recovery_mu_);
    recovery_.problems = flows.restore(state.definitions);
    dispatcher.restore(state, flows);
    contexts.start_at(state.counters.context_seq + 1);
    recovery_.last_seq = state.counters.context_seq;
    for (const StoredDefinition& d : state.definitions) {
      if (d.type == "flow" && d.active) recovery_.active.push_back(d);
    }
    recovery_.locks = std::move(state.locks);
    keyed_writes.restore(std::move(state.keyed_writes));
    engine_log().info("{}: {} records, {} definitions, {} contexts so far, clock {}", store->describe(),
                      dispatcher.record_count(), state.definitions.size(), state.counters.context_seq,
                      format_time(clock.now()));
  }
  journal = std::make_unique<Journal>(*this, *store, counters);
  dispatcher.set_journal(journal.get());
  keyed_writes.set_journal(journal.get());
  // Finished contexts leave memory once durable (the journal releases them).
  contexts.set_finished_elsewhere();
  return Status::ok();
}

void EngineCore::note_loaded(const std::vector<Definition>& defs) {
  MutexLock lock(recovery_mu_);
  if (recovery_.done) return;
  for (const Definition& d : defs) {
    if (d.type == UnitType::kFlow) recovery_.loaded.push_back(d.id);
  }
}

void EngineCore::journal_append(JournalEntry entry) {
  if (journal) journal->append(std::move(entry));
}

void EngineCore::journal_definition(UnitType type, std::string_view id) {
  if (!journal) return;
  std::optional<StoredDefinition> d = flows.stored(type, id);
  if (!d) return;
  JournalEntry e;
  e.changes.push_back(DefinitionPut{std::move(*d)});
  // As a commit's entry (Dispatcher::journal_locked): a forwarded operation's change
  // carries its inbox number, so that the batch making it durable says it was applied and
  // a new leader does not apply it again; a keyed write's first change carries its key's
  // mark.
  e.operation = OperationTag::current();
  KeyedWrites::note_commit(&e.changes);
  journal->append(std::move(e));
  (void)OperationTag::note_commit();  // after the append: the next operation starts after it
}

namespace {
thread_local DurabilityDeferral* t_deferral = nullptr;  // the calling thread's live deferral
}  // namespace

DurabilityDeferral::DurabilityDeferral() : previous_(t_deferral) { t_deferral = this; }
DurabilityDeferral::~DurabilityDeferral() { t_deferral = previous_; }
DurabilityDeferral* DurabilityDeferral::current() { return t_deferral; }

Status EngineCore::wait_durable() {
  if (!journal) return Status::ok();
  const uint64_t appended = journal->appended();
  if (props().durability == Durability::kOff) {
    // Not waiting for its own entry, but never further than kOffBacklog entries ahead of the
    // writer: what waits to be written (and the memory it holds) stays bounded. Not
    // deferred: nothing is promised durable, and the wait is rare.
    if (appended > kOffBacklog) (void)journal->wait_durable(appended - kOffBacklog);
    return Status::ok();
  }
  if (DurabilityDeferral* d = DurabilityDeferral::current()) {
    d->defer(appended);  // its caller waits (Engine::durable_state)
    return Status::ok();
  }
  return journal->wait_durable(appended);
}

void EngineCore::journal_unfinished() {
  JournalEntry entry;
  const size_t limit = props().record_value_limit;
  for (const std::shared_ptr<Context>& ctx : contexts.unfinished()) {
    const Context::Summary s = ctx->summary();
    if (s.started < 0) continue;  // still queued: its row says so
    std::optional<Value> record = ctx->to_value_unless_resting(limit);
    if (!record) continue;  // resting: its row holds its record already
    entry.changes.push_back(ContextUpdate{ctx->seq, std::string(status_name(s.status)), s.started, s.ended,
                                          std::move(*record), Value()});
  }
  journal->append(std::move(entry));
}

}  // namespace flowrt
