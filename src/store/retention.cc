#include "store/retention.h"

#include <algorithm>
#include <map>
#include <utility>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"

namespace rsl::store {
namespace {

bool Finished(const Run& r) {
  return spec::IsTerminal(r.phase) && r.commit_state != kCommitCommitting && r.finished_at > 0;
}

// True when `path` is strictly below `root` (both absolute, lexically normal).
bool Below(const std::string& path, const std::string& root) {
  if (root.empty() || path.size() <= root.size() + 1) return false;
  if (path.compare(0, root.size(), root) != 0 || path[root.size()] != '/') return false;
  return path.find("/../") == std::string::npos && path.find("/./") == std::string::npos;
}

}  // namespace

std::vector<std::string> RunsToCollect(const std::vector<Run>& runs, const RetentionPolicy& policy,
                                       int64_t now_ms) {
  std::vector<std::string> out;
  if (!policy.enabled()) return out;
  // Finished runs per (namespace, name), newest first.
  std::map<std::pair<std::string, std::string>, std::vector<const Run*>> by_name;
  for (const Run& r : runs) {
    if (Finished(r)) by_name[{r.namespace_, r.name}].push_back(&r);
  }
  std::vector<const Run*> chosen;
  for (auto& [key, list] : by_name) {
    std::sort(list.begin(), list.end(), [](const Run* a, const Run* b) {
      if (a->created_at != b->created_at) return a->created_at > b->created_at;
      return a->id > b->id;
    });
    const Run* newest_succeeded = nullptr;
    for (const Run* r : list) {
      if (r->phase == spec::RunPhase::kSucceeded) {
        newest_succeeded = r;
        break;
      }
    }
    for (size_t i = 1; i < list.size(); ++i) {  // list[0], the newest, always stays
      const Run* r = list[i];
      if (r == newest_succeeded || r->collected_at != 0) continue;
      bool over_count = policy.keep_versions > 0 && i >= size_t(policy.keep_versions);
      bool too_old = policy.keep_for_ms > 0 && r->finished_at + policy.keep_for_ms <= now_ms;
      if (over_count || too_old) chosen.push_back(r);
    }
  }
  std::sort(chosen.begin(), chosen.end(), [](const Run* a, const Run* b) {
    if (a->created_at != b->created_at) return a->created_at < b->created_at;
    return a->id < b->id;
  });
  out.reserve(chosen.size());
  for (const Run* r : chosen) out.push_back(r->id);
  return out;
}

Result<Collected> Collect(Store* store, Env* env, const std::string& runs_dir,
                          const RetentionPolicy& policy, bool dry_run) {
  Collected done;
  if (!policy.enabled()) return done;
  auto runs = store->ListRuns(RunFilter{});
  if (!runs.ok()) return runs.error();
  std::map<std::string, const Run*> by_id;
  for (const Run& r : *runs) by_id[r.id] = &r;
  for (const std::string& id : RunsToCollect(*runs, policy, env->NowMs())) {
    const Run& r = *by_id[id];
    bool owned_dir = Below(r.run_dir, runs_dir) && env->PathExists(r.run_dir);
    if (owned_dir) done.bytes_freed += std::max<int64_t>(0, TreeBytes(r.run_dir));
    if (!dry_run) {
      if (owned_dir) {
        Status rm = env->RemoveAll(r.run_dir);
        if (!rm.ok()) {
          return Error(codes::kIoError,
                       "retention: cannot remove " + Quote(r.run_dir) + ": " + rm.error().message)
              .Value(r.id)
              .Hint(
                  "check the owner and mode of the run directory; nothing of the run's rows "
                  "was removed");
        }
      }
      RSL_RETURN_IF_ERROR(store->CollectRun(r.id, env->NowMs()));
    }
    done.run_ids.push_back(id);
  }
  return done;
}

}  // namespace rsl::store
