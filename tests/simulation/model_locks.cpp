// Model, the lock half: lock steps read from the records against their definitions.
#include "tests/simulation/model.h"
#include "tests/simulation/sim_json.h"

namespace flowrt::sim {

void Model::lock_checks(const Snapshot& snap, bool quiescent, Violations* out) {
  (void)snap;
  (void)quiescent;
  (void)out;
}

}  // namespace flowrt::sim
