// A Store that fails on demand (a full disk, an I/O error under SQLite): it forwards every
// call to its target and fails the Nth Apply from now on, once or from then on, applying
// nothing of that batch. For tests of what the engine does when a transition cannot be made
// durable (docs/engine.md "Faults").
#pragma once

#include <mutex>

#include "store/store.h"

namespace rsl::store {

class FailingStore : public StoreWrapper {
 public:
  explicit FailingStore(Store* target) : StoreWrapper(target) {}

  //! The `n`-th Apply from now on (1-based) fails with IO_ERROR; with `sticky`, every later
  //! one too. Replaces an earlier fault.
  void FailNthApply(int n, bool sticky = false);
  //! No more failures (counts go on).
  void Heal();
  //! Applies so far (failed ones included), and the failed ones.
  int applies();
  int failures();

  Status Apply(Batch* batch) override;

 private:
  std::mutex mu_;
  int applies_ = 0;      // GUARDED_BY(mu_)
  int fail_at_ = 0;      // GUARDED_BY(mu_): 0 = none
  bool sticky_ = false;  // GUARDED_BY(mu_)
  int failures_ = 0;     // GUARDED_BY(mu_)
};

}  // namespace rsl::store
