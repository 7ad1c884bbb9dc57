// What every Store shares, whatever keeps its rows: ids, the liveness of a step's attempt, and
// the page query answered from ListRuns for a store without an index of its own.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <random>

#include "base/strings.h"
#include "store/store.h"

namespace rsl::store {

namespace {

// The runs of `q` in ListRunsPage's order, without cursor or limit, by ListRuns and the
// versions' labels: what a Store without its own page query answers.
Result<std::vector<Run>> MatchingRuns(Store* store, const RunPageQuery& q) {
  RunFilter f;
  f.namespace_ = q.namespace_;
  f.name = q.name;
  auto runs = store->ListRuns(f);
  if (!runs.ok()) return runs.error();
  std::vector<Run> out;
  for (auto& r : *runs) {
    if (!q.phase.empty() && spec::Name(r.phase) != q.phase) continue;
    if (!q.label_key.empty()) {
      auto v = store->GetVersion(r.workload_id);
      if (!v.ok()) continue;
      auto it = v->labels.find(q.label_key);
      if (it == v->labels.end() || it->second != q.label_value) continue;
    }
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const Run& a, const Run& b) {
    return a.created_at != b.created_at ? a.created_at > b.created_at
                                        : a.workload_id > b.workload_id;
  });
  return out;
}

}  // namespace

Result<std::vector<Run>> Store::ListRunsPage(const RunPageQuery& q) {
  auto runs = MatchingRuns(this, q);
  if (!runs.ok()) return runs.error();
  std::vector<Run> out;
  for (auto& r : *runs) {
    if (!q.before_workload_id.empty() &&
        !(r.created_at < q.before_created_at ||
          (r.created_at == q.before_created_at && r.workload_id < q.before_workload_id))) {
      continue;
    }
    if (q.limit > 0 && static_cast<int>(out.size()) >= q.limit) break;
    out.push_back(std::move(r));
  }
  return out;
}

Result<int64_t> Store::CountRuns(const RunPageQuery& q) {
  auto runs = MatchingRuns(this, q);
  if (!runs.ok()) return runs.error();
  return static_cast<int64_t>(runs->size());
}

Result<PhaseCounts> Store::CountPhases() {
  auto runs = ListRuns({});
  if (!runs.ok()) return runs.error();
  PhaseCounts out;
  for (const auto& r : *runs) {
    out.runs[spec::Name(r.phase)] += 1;
    auto steps = ListSteps(r.id);
    if (!steps.ok()) return steps.error();
    for (const auto& s : *steps) out.steps[spec::Name(s.phase)] += 1;
  }
  return out;
}

Result<std::vector<Step>> Store::ListStepsPage(const StepPageQuery& q) {
  auto steps = ListSteps(q.run_id);
  if (!steps.ok()) return steps.error();
  if (q.last_first) std::reverse(steps->begin(), steps->end());
  std::vector<Step> out;
  for (auto& s : *steps) {
    if (q.limit > 0 && static_cast<int>(out.size()) >= q.limit) break;
    if (!q.last_first && s.index <= q.after_index) continue;
    if (q.last_first && q.before_index >= 0 && s.index >= q.before_index) continue;
    if (!q.phases.empty() &&
        std::find(q.phases.begin(), q.phases.end(), s.phase) == q.phases.end()) {
      continue;
    }
    if (q.started_only && s.started_at <= 0) continue;
    if (q.live_only && !StepAttemptLive(s)) continue;
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::map<std::string, int64_t>> Store::CountSteps(const std::string& run_id) {
  auto steps = ListSteps(run_id);
  if (!steps.ok()) return steps.error();
  std::map<std::string, int64_t> out;
  for (const auto& s : *steps) out[spec::Name(s.phase)] += 1;
  return out;
}

Result<int64_t> Store::CountEvents(const std::string& run_id) {
  auto events = ListEvents(run_id, 0);
  if (!events.ok()) return events.error();
  return static_cast<int64_t>(events->size());
}

Result<std::vector<Event>> Store::ListLastEvents(const std::string& run_id, int limit) {
  auto events = ListEvents(run_id, 0);
  if (!events.ok()) return events.error();
  if (limit > 0 && events->size() > static_cast<size_t>(limit)) {
    events->erase(events->begin(), events->end() - limit);
  }
  return events;
}

bool StepAttemptLive(const Step& s) {
  return s.phase == spec::StepPhase::kRunning ||
         (s.phase == spec::StepPhase::kPending && s.attempts > 0 && !s.attempt_id.empty() &&
          s.finished_at == 0) ||
         (s.phase == spec::StepPhase::kTimedOut && s.attempts > 0 && !s.attempt_id.empty() &&
          s.finished_at == 0);
}

uint64_t NextVersionIdValue(uint64_t last, int64_t now_ms, uint32_t offset) {
  constexpr int64_t kDayMs = 86'400'000;
  now_ms = std::max<int64_t>(now_ms, 0);  // a clock before 1970: its first second
  int64_t day = now_ms / kDayMs;
  int64_t second_of_day = now_ms % kDayMs / 1000;
  uint64_t floor = (static_cast<uint64_t>(day) << 32) |
                   (static_cast<uint64_t>(second_of_day) << kVersionIdSequenceBits) |
                   (offset & kVersionIdOffsetMask);
  return std::max(last + 1, floor);
}

std::string VersionIdOf(uint64_t value) {
  std::string date = FormatUtc(static_cast<int64_t>(value >> 32) * 86'400, "%Y%m%d");
  char hex[9];
  snprintf(hex, sizeof(hex), "%08x", static_cast<uint32_t>(value));
  return std::string("wl-") + date + "-" + hex;
}

std::string NewVersionId(int64_t now_ms) {
  // Time-ordered, not random-looking: the ids a controller draws one after another sort
  // next to each other, and so do the keys of their rows in every table keyed by run (the
  // steps, the events' run index, the attempts' and launch records' ids), which keeps the
  // pages a commit writes few and shared by the runs in flight. With random ids each run
  // in a commit was a leaf page of its own in each of those B-trees: under
  // bench/api_load.sh the controller took 11 % more CPU per workload (bench/README.md,
  // "Session 36"). Ids are names, not secrets (the API checks every read against the
  // caller's namespaces), as Slurm's job ids are a counter.
  // Each process starts its seconds at an offset of its own, so that two processes on one
  // store (two `seedctl run` at once) seldom draw the same id; when they do, the store
  // refuses the second (CONFLICT, its value the id) and the engine draws again
  // (Engine::Submit).
  static const uint32_t offset = [] {
    std::random_device rd;
    return static_cast<uint32_t>(rd());
  }();
  static std::atomic<uint64_t> last{0};
  uint64_t prev = last.load(std::memory_order_relaxed);
  uint64_t next = 0;
  do {
    next = NextVersionIdValue(prev, now_ms, offset);
  } while (!last.compare_exchange_weak(prev, next, std::memory_order_relaxed));
  return VersionIdOf(next);
}

std::string RunIdFor(const std::string& version_id) {
  if (StartsWith(version_id, "wl-")) return "run-" + version_id.substr(3);
  return "run-" + version_id;
}

void AppendBatch(Batch&& from, Batch* to) {
  auto move = [](auto& src, auto& dst) {
    if (dst.empty()) {
      dst = std::move(src);
    } else {
      dst.insert(dst.end(), std::make_move_iterator(src.begin()),
                 std::make_move_iterator(src.end()));
    }
    src.clear();
  };
  move(from.versions, to->versions);
  move(from.runs, to->runs);
  move(from.steps, to->steps);
  move(from.attempts, to->attempts);
  move(from.events, to->events);
  move(from.artifacts, to->artifacts);
  move(from.lineage, to->lineage);
  move(from.also, to->also);
}

}  // namespace rsl::store
