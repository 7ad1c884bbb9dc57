// The step hook that records every attempt's cost when it ends (AfterStep, for failed
// attempts too), priced by govern::CostOfAttempt (govern/attempt_cost.h) with the state
// directory's price table, and stored in its govern tables.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "base/env.h"
#include "engine/hooks.h"
#include "govern/cost.h"
#include "govern/price.h"

namespace rsl::runtime {

class CostHook : public engine::StepHook {
 public:
  //! `state_dir`: where rsl.db and prices.yaml live ("" = the run's). `env` is the clock
  //! (tests fake it); nullptr: Env::Default(). It must outlive the hook. `price_file`: the
  //! price table to use instead of <state_dir>/prices.yaml ("" = that one); read at every
  //! attempt's end, so an edit counts from the next attempt on.
  explicit CostHook(std::string state_dir, Env* env = nullptr, std::string price_file = "");

  std::string name() const override { return "cost"; }
  //! Records the attempt; never fails the step (accounting errors go to stderr and the
  //! returned status is Ok, so a broken price table cannot fail training). The record is
  //! committed with the store's next commit (govern::CostStore::OpenShared): the one of the
  //! engine's turn that ends the attempt. A state_dir without a store open in this process:
  //! at once, in a transaction of its own.
  Status AfterStep(const engine::RunInfo& run, const spec::Step& step,
                   const engine::StepOutcome& outcome) override;

  //! The last accounting error ("" when none), for tests and `describe`.
  std::string last_error() const;

 private:
  std::string state_dir_;
  Env* env_;
  std::string price_file_;
  mutable std::mutex mu_;
  std::unique_ptr<govern::CostStore> store_;  // GUARDED_BY(mu_), opened on first use
  // Where a record not written is reported: from AfterStep, or later from the store's
  // commit (which may come after this hook is gone: the store holds it too). Its own mutex:
  // it is called under mu_ or under the store's.
  struct Errors {
    std::mutex mu;
    std::string last;  // GUARDED_BY(mu)
    void Report(const std::string& run_id, const std::string& step, int attempt, const Error& e);
  };
  std::shared_ptr<Errors> errors_ = std::make_shared<Errors>();
  // The price table as last parsed, and the file it came from as it was then (path, inode,
  // size, times): parsed again only when the file changed (parsing its YAML at every
  // attempt's end was 5% of the controller's CPU under api_load).
  std::string prices_key_;     // GUARDED_BY(mu_), "" = none parsed
  govern::PriceTable prices_;  // GUARDED_BY(mu_)
};

}  // namespace rsl::runtime
