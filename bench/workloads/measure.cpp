#include "bench/workloads/measure.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <thread>

#include "runtime/engine_core.h"
#include "runtime/flow_slot.h"
#include "runtime/journal.h"

namespace flowrt::bench {
namespace {

uint64_t status_kb(const char* field) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  uint64_t kb = 0;
  const size_t n = std::strlen(field);
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, field, n) == 0) {
      kb = std::strtoull(line + n, nullptr, 10);
      break;
    }
  }
  std::fclose(f);
  return kb;
}

// Waits until the journal has made `position` durable; a store that failed is a broken run.
void wait_durable_or_throw(Journal& journal, uint64_t position) {
  if (Status s = journal.wait_durable(position); !s) throw std::runtime_error("the store failed: " + s.message());
}

// The p-th percentile of `ns` (sorted), in µs.
double percentile_us(const LatencyHistogram::Counts& ns, double p) {
  return static_cast<double>(ns.percentile(p)) / 1000.0;
}

}  // namespace

uint64_t rss_bytes() { return status_kb("VmRSS:") * 1024; }
uint64_t peak_rss_bytes() { return status_kb("VmHWM:") * 1024; }

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void load_or_throw(Engine& engine, std::string_view text, const std::string& file) {
  Diagnostics d = engine.load_text(text, file);
  if (!d.empty()) throw std::runtime_error(d.describe());
}

void insert_or_throw(Engine& engine, std::string_view table, const Value& row) {
  if (Result<Value> r = engine.insert(table, row); !r) {
    throw std::runtime_error("cannot insert into " + std::string(table) + ": " + r.message());
  }
}

std::chrono::steady_clock::time_point Pacer::due(uint64_t done) const {
  if (rate_ <= 0) return start_;  // no pacing: everything is due from the start
  return start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(static_cast<double>(done) / rate_));
}

void Pacer::wait_for(uint64_t done) {
  if (rate_ <= 0) return;
  const auto at = due(done);
  // Sleep, not spin: a spinning harness would take a core from the workers it measures.
  // Operations that fall due while it sleeps are then committed back to back.
  const auto now = std::chrono::steady_clock::now();
  if (now < at) std::this_thread::sleep_until(at);
}

EngineOptions bench_engine_options(const BenchOptions& o) {
  EngineOptions eo;
  eo.virtual_clock = false;
  eo.properties.worker_threads = o.workers;
  eo.measure_latency = true;
  eo.properties.context_retention = o.retention;
  // With a durable store finished contexts leave memory anyway; the store keeps `retention`.
  if (o.store != "memory") eo.properties.history_max_count = o.retention;
  eo.store = o.store;
  if (o.store == "postgresql") eo.store_url = o.data_file;
  else eo.data_file = o.data_file;
  if (Status s = set_property(&eo.properties, "durability", Value(std::string_view(o.durability))); !s) {
    throw std::runtime_error(s.message());
  }
  return eo;
}

std::unique_ptr<Engine> open_bench_engine(const EngineOptions& options) {
  Result<std::unique_ptr<Engine>> opened = Engine::open(options);
  if (!opened) throw StoreUnavailable(opened.message());
  return std::move(opened).value();
}

void fill_latency(EngineCore& core, BenchResult* r) {
  // Those whose live form left memory (released by a durable store; frozen by the memory
  // store, counted when they finished), then, with a durable store, those finished but not
  // released yet. Each whole (commit to end), and its wait (commit to first taken).
  LatencyHistogram::Counts ns = core.released_latencies.counts();
  LatencyHistogram::Counts waits = core.released_waits.counts();
  if (core.journal) {
    core.contexts.for_each([&](const KeptContext& kept) {
      const std::shared_ptr<Context>& c = kept.live();
      if (!c) return;
      const int64_t end = c->ended_ns.load(std::memory_order_acquire);
      if (end <= 0 || c->committed_ns <= 0) return;
      ns.add(end - c->committed_ns);
      if (c->taken_ns > 0) waits.add(c->taken_ns - c->committed_ns);
    });
  }
  if (ns.total() == 0) return;
  r->p50_us = percentile_us(ns, 0.50);
  r->p99_us = percentile_us(ns, 0.99);
  r->p999_us = percentile_us(ns, 0.999);
  if (waits.total() == 0) return;
  r->extra.emplace_back("wait_p50_us", percentile_us(waits, 0.50));
  r->extra.emplace_back("wait_p99_us", percentile_us(waits, 0.99));
}

BenchResult drive_inserts(Engine& engine, std::string_view table, const std::vector<Value>& rows,
                          const BenchOptions& o) {
  return drive(engine, rows.size(), [&](uint64_t i) { insert_or_throw(engine, table, rows[i]); }, o);
}

BenchResult drive(Engine& engine, uint64_t count, const std::function<void(uint64_t)>& op, const BenchOptions& o) {
  const uint64_t rss_before = rss_bytes();
  const double cpu_before = process_cpu_seconds();
  const uint64_t seq_before = engine.core().dispatcher.last_seq();
  uint64_t warm_rss = 0, warm_seq = 0;
  long warm_faults = 0;
  Pacer pacer(o.rate);
  const auto start = std::chrono::steady_clock::now();
  // Client c commits operations c, c + clients, ...; client 0 also takes the warm-up mark
  // and reports progress. With one client this is the plain loop.
  const unsigned clients = std::max(1u, o.clients);
  // Contexts waiting to start: in the event queue, or in the journal until their commit is
  // written. Sampled by the closed loop (every 16 operations per client), with its peak.
  Journal* const backlog_journal = engine.core().journal.get();
  auto queued_now = [&] {
    return static_cast<uint64_t>(engine.core().events.size_approx()) +
           (backlog_journal ? static_cast<uint64_t>(backlog_journal->undelivered()) : 0);
  };
  std::atomic<uint64_t> peak_queued{0};
  uint64_t producer_ran = 0;  // contexts the (one) producer ran itself (producer_runs)
  Journal* const durable_journal = engine.core().journal.get();  // null: the memory store
  auto client = [&](unsigned c) {
    std::deque<uint64_t> unanswered;  // with in_flight: this client's commits not yet durable, oldest first
    for (uint64_t i = c; i < count; i += clients) {
      if (clients == 1) {
        // Ahead of its pace, the producer may run what it queued, then sleeps the rest.
        if (o.producer_runs && o.rate > 0) producer_ran += engine.run_queued_until(pacer.due(i));
        pacer.wait_for(i);
      }
      if (o.max_queued > 0 && ((i / clients) & 15) == 0) {
        uint64_t q = queued_now();
        uint64_t seen = peak_queued.load(std::memory_order_relaxed);
        while (q > seen && !peak_queued.compare_exchange_weak(seen, q, std::memory_order_relaxed)) {
        }
        while (q >= o.max_queued) {
          std::this_thread::sleep_for(std::chrono::microseconds(20));
          q = queued_now();
        }
      }
      if (c == 0 && i / clients == count / 5 / clients) {  // past the warm-up: the steady state starts here
        warm_rss = rss_bytes();
        warm_faults = minor_faults();
        warm_seq = engine.core().dispatcher.last_seq();
      }
      if (o.in_flight > 0 && durable_journal) {
        // The commit returns once it is committed; its durability is waited for later,
        // oldest first (durable positions grow in order, so the oldest is the first due).
        DurabilityDeferral deferral;
        op(i);
        if (deferral.position() > 0) unanswered.push_back(deferral.position());
        if (unanswered.size() >= o.in_flight) {
          wait_durable_or_throw(*durable_journal, unanswered.front());
          unanswered.pop_front();
        }
      } else {
        op(i);
      }
      if (c == 0 && o.progress && ((i / clients) & 0xFFFF) == 0) {
        o.progress(static_cast<double>(i) / static_cast<double>(count));
      }
    }
  };
  if (clients == 1) {
    client(0);
  } else {
    std::vector<std::thread> threads;
    for (unsigned c = 0; c < clients; ++c) threads.emplace_back(client, c);
    for (std::thread& t : threads) t.join();
  }
  engine.settle();
  Journal* journal = engine.core().journal.get();
  // With a durable store, done means written: every record and context record in the store.
  if (journal) {
    (void)journal->wait_durable(journal->appended());
    journal->wait_delivered(journal->appended());  // and the finished contexts let go of
  }
  BenchResult r;
  r.seconds = seconds_since(start);
  r.events = count;
  r.workers = o.workers;
  r.contexts = engine.core().dispatcher.last_seq() - seq_before;  // started, kept or not
  r.contexts_per_s = static_cast<double>(r.contexts) / r.seconds;
  if (r.contexts) r.cpu_us_per_context = (process_cpu_seconds() - cpu_before) * 1e6 / static_cast<double>(r.contexts);
  fill_latency(engine.core(), &r);
  r.peak_rss_bytes = peak_rss_bytes();
  const uint64_t rss_after = rss_bytes();
  const uint64_t kept = engine.core().contexts.size();
  r.bytes_per_context = kept ? static_cast<double>(rss_after - std::min(rss_after, rss_before)) / static_cast<double>(kept) : 0;
  const uint64_t steady = engine.core().dispatcher.last_seq() - warm_seq;
  if (steady > 0) {
    const double grown = static_cast<double>(rss_after) - static_cast<double>(warm_rss);
    r.extra.emplace_back("steady_rss_growth_bytes_per_context", grown / static_cast<double>(steady));
    r.extra.emplace_back("steady_minor_faults_per_context",
                         static_cast<double>(minor_faults() - warm_faults) / static_cast<double>(steady));
  }
  r.extra.emplace_back("contexts_kept", static_cast<double>(kept));
  if (o.producer_runs) r.extra.emplace_back("producer_ran_contexts", static_cast<double>(producer_ran));
  // The frozen records' own bytes (header and packed record, not what they reference nor
  // the allocator's rounding): the part of bytes_per_context that is the record itself.
  size_t frozen = 0, frozen_bytes = 0;
  engine.core().contexts.for_each([&](const KeptContext& c) {
    if (!c.frozen()) return;
    ++frozen;
    frozen_bytes += c.frozen()->footprint();
  });
  if (frozen > 0) r.extra.emplace_back("frozen_record_bytes", static_cast<double>(frozen_bytes) / static_cast<double>(frozen));
  if (o.max_queued > 0) {
    r.extra.emplace_back("max_queued", static_cast<double>(o.max_queued));
    r.extra.emplace_back("peak_queued_sampled", static_cast<double>(peak_queued.load()));
  }
  if (journal) {
    r.extra.emplace_back("store_batches", static_cast<double>(journal->batches()));
    r.extra.emplace_back("store_batches_per_s", static_cast<double>(journal->batches()) / r.seconds);
  }
  return r;
}

}  // namespace flowrt::bench
