#include "tests/simulation/perturbation.h"

#include <atomic>
#include <random>
#include <thread>

#include "runtime/perturb.h"

namespace flowrt::sim {
namespace {

std::atomic<uint64_t> g_seed{0};
std::atomic<uint64_t> g_generation{0};
std::atomic<uint64_t> g_threads{0};

void spin(unsigned n) {
  std::atomic<unsigned> sink{0};
  for (unsigned i = 0; i < n; ++i) sink.fetch_add(1, std::memory_order_relaxed);
}

void perturb_here(PerturbPoint point) {
  thread_local uint64_t generation = 0;
  thread_local std::mt19937_64 rng;
  const uint64_t now = g_generation.load(std::memory_order_relaxed);
  if (generation != now) {
    generation = now;
    rng.seed(g_seed.load(std::memory_order_relaxed) * 1000003 + g_threads.fetch_add(1, std::memory_order_relaxed));
  }
  const uint64_t r = rng();
  // Lock hand-offs and wake-ups get more delay than the rest: that is where the order of
  // two threads decides who runs next.
  const unsigned weight = point == PerturbPoint::kWake || point == PerturbPoint::kBeforeLockRelease || point == PerturbPoint::kBetweenParkAndWait ? 2 : 1;
  switch ((r % 100) / (weight == 2 ? 1 : 2)) {
    case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9:
      std::this_thread::yield();
      return;
    case 10: case 11: case 12: case 13: case 14: {
      spin(static_cast<unsigned>((r >> 8) % 2000));
      return;
    }
    case 15:  // a long spin: the other threads get far ahead
      spin(20000 + static_cast<unsigned>((r >> 8) % 50000));
      return;
    default: return;
  }
}

}  // namespace

Perturbation::Perturbation(uint64_t seed) {
  g_seed.store(seed, std::memory_order_relaxed);
  g_threads.store(0, std::memory_order_relaxed);
  g_generation.fetch_add(1, std::memory_order_relaxed);
  set_perturb_hook(&perturb_here);
}

Perturbation::~Perturbation() { set_perturb_hook(nullptr); }

}  // namespace flowrt::sim
