#include "runtime/cost_hooks.h"

#include <sys/stat.h>

#include <cstdio>

#include "govern/attempt_cost.h"

namespace rsl::runtime {

namespace {

// What identifies a file's contents without reading it: its path, inode, size and times
// ("" when it cannot be stat'ed). An edit, in place or by rename, changes one of them.
std::string FileKey(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return path + ":" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
         std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_ctim.tv_sec) + "." +
         std::to_string(st.st_ctim.tv_nsec);
}

}  // namespace

CostHook::CostHook(std::string state_dir, Env* env, std::string price_file)
    : state_dir_(std::move(state_dir)),
      env_(env ? env : Env::Default()),
      price_file_(std::move(price_file)) {}

std::string CostHook::last_error() const {
  std::lock_guard<std::mutex> lock(errors_->mu);
  return errors_->last;
}

void CostHook::Errors::Report(const std::string& run_id, const std::string& step, int attempt,
                              const Error& e) {
  std::lock_guard<std::mutex> lock(mu);
  last = e.ToString();
  std::fprintf(stderr, "cost: %s/%s attempt %d not recorded: %s\n", run_id.c_str(), step.c_str(),
               attempt, last.c_str());
}

Status CostHook::AfterStep(const engine::RunInfo& run, const spec::Step& step,
                           const engine::StepOutcome& outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  auto fail = [&](const Error& e) {
    errors_->Report(run.run_id, outcome.step, outcome.attempt, e);
    return Status::Ok();
  };
  std::string state_dir = state_dir_.empty() ? run.state_dir : state_dir_;
  if (!store_) {
    // Committed with the store's next commit: see CostStore::OpenShared. A record that fails
    // there is reported as one that fails here.
    Result<std::unique_ptr<govern::CostStore>> s = govern::CostStore::OpenShared(
        state_dir, [errors = errors_](const govern::CostRecord& r, const Error& e) {
          errors->Report(r.run_id, r.step, r.attempt, e);
        });
    if (!s.ok()) return fail(s.error());
    store_ = std::move(*s);
  }
  const std::string path = price_file_.empty() ? state_dir + "/" + govern::kPriceFile : price_file_;
  const std::string key = FileKey(path);
  if (key.empty() || key != prices_key_) {
    Result<govern::PriceTable> loaded = price_file_.empty()
                                            ? govern::LoadPriceTable(state_dir)
                                            : govern::LoadPriceTableFile(price_file_);
    if (!loaded.ok()) {
      prices_key_.clear();
      return fail(loaded.error());
    }
    prices_ = std::move(*loaded);
    // The key from before the read: an edit while it was read is seen at the next attempt.
    // (None before: LoadPriceTable has just written the default table.)
    prices_key_ = key.empty() ? FileKey(path) : key;
  }
  const govern::PriceTable* prices = &prices_;

  govern::AttemptFacts a;
  a.run_id = run.run_id;
  a.workload_id = run.workload_id;
  a.step = outcome.step;
  a.attempt = outcome.attempt;
  a.exit_kind = backend::ExitKindName(outcome.exit.kind);
  a.metrics_json = outcome.metrics_json;
  a.usage.gpus = outcome.allocated_gpus;
  a.usage.wall_ms = outcome.exit.usage.wall_ms;
  a.usage.cpu_request_millis = outcome.allocated_cpu_millis;
  a.usage.cpu_used_ms = outcome.exit.usage.cpu_ms;
  a.usage.memory_request_bytes = outcome.allocated_memory_bytes;
  a.usage.peak_memory_bytes = outcome.exit.usage.peak_memory_bytes;
  a.usage.device_model = outcome.gpu_model;
  Result<govern::CostRecord> record =
      govern::CostOfAttempt(a, run.workload, step, *prices, env_->NowMs());
  if (!record.ok()) return fail(record.error());
  // The store has its own mutex.
  Status st = store_->Record(*record);
  if (!st.ok()) return fail(st.error());
  return Status::Ok();
}

}  // namespace rsl::runtime
