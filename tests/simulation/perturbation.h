// Perturbation: while alive, the engine's perturbation points (runtime/perturb.h) yield
// or spin briefly at random, from a generator seeded by the seed, so that the interleavings
// of real worker threads vary from seed to seed. Contract: one at a time; install it
// before the engine starts its threads and destroy it after they stopped. The same seed
// does not replay the same interleaving (the operating system schedules the threads); it
// only makes different seeds explore different ones.
#pragma once

#include <cstdint>

namespace flowrt::sim {

class Perturbation {
 public:
  explicit Perturbation(uint64_t seed);
  ~Perturbation();
  Perturbation(const Perturbation&) = delete;
  Perturbation& operator=(const Perturbation&) = delete;
};

}  // namespace flowrt::sim
