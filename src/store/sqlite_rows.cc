#include "store/sqlite_rows.h"

#include <nlohmann/json.hpp>

namespace rsl::store {

using nlohmann::json;

std::string MapToJson(const std::map<std::string, std::string>& m) { return json(m).dump(); }
std::map<std::string, std::string> MapFromJson(const std::string& text) {
  std::map<std::string, std::string> out;
  json j = json::parse(text, nullptr, false);
  if (j.is_object()) {
    for (auto& [k, v] : j.items()) {
      if (v.is_string()) out[k] = v.get<std::string>();
    }
  }
  return out;
}

Result<Run> ReadRun(const Stmt& s) {
  Run r;
  std::string phase;
  s.Into(&r.id, &r.workload_id, &r.name, &r.namespace_, &phase, &r.failure_code, &r.failure_message,
         &r.created_at, &r.started_at, &r.finished_at, &r.run_dir, &r.admission_report_json,
         &r.commit_state, &r.committed_uri, &r.collected_at);
  auto parsed = spec::ParseRunPhase(phase);
  if (!parsed.ok()) return parsed.error().Path("store_runs[" + r.id + "].phase");
  r.phase = *parsed;
  return r;
}

Result<Step> ReadStep(const Stmt& s) {
  Step st;
  std::string phase;
  s.Into(&st.run_id, &st.name, &st.index, &phase, &st.attempts, &st.retries_used, &st.attempt_id,
         &st.node, &st.exit_code, &st.signal, &st.wall_ms, &st.cpu_ms, &st.peak_memory_bytes,
         &st.started_at, &st.finished_at, &st.next_attempt_at, &st.failure_code, &st.message,
         &st.metrics_json, &st.progress, &st.output_dir, &st.peak_cpu_millicores);
  auto parsed = spec::ParseStepPhase(phase);
  if (!parsed.ok()) {
    return parsed.error().Path("store_steps[" + st.run_id + "/" + st.name + "].phase");
  }
  st.phase = *parsed;
  return st;
}

WorkloadVersion ReadVersion(const Stmt& s) {
  WorkloadVersion v;
  std::string labels_json;
  s.Into(&v.id, &v.name, &v.namespace_, &v.spec_json, &v.digest, &v.created_at, &v.created_by,
         &labels_json, &v.version, &v.rollback_of);
  v.labels = MapFromJson(labels_json);
  return v;
}

Result<Attempt> ReadAttempt(const Stmt& s) {
  Attempt a;
  std::string state;
  s.Into(&a.id, &a.run_id, &a.step, &a.number, &state, &a.exit_kind, &a.created_at, &a.finished_at,
         &a.launch_json);
  auto parsed = spec::ParseAttemptPhase(state);
  if (!parsed.ok()) return parsed.error().Path("store_attempts[" + a.id + "].state");
  a.state = *parsed;
  return a;
}

Event ReadEvent(const Stmt& s) {
  Event e;
  s.Into(&e.seq, &e.run_id, &e.step, &e.type, &e.reason, &e.message, &e.time);
  return e;
}

Artifact ReadArtifact(const Stmt& s) {
  Artifact a;
  s.Into(&a.run_id, &a.step, &a.uri, &a.bytes, &a.kind, &a.digest);
  return a;
}

LineageEdge ReadLineageEdge(const Stmt& s) {
  LineageEdge e;
  s.Into(&e.run_id, &e.from, &e.to, &e.relation, &e.from_json);
  return e;
}

std::string ReadText0(const Stmt& s) { return s.Text(0); }

}  // namespace rsl::store
