// What the HTTP server needs from the rest of the controller, as Kubernetes-style JSON
// objects (apiVersion/kind/metadata/spec/status). The server does authentication,
// authorisation, routing, errors, audit and request metrics; a Service only does the work.
// ControllerService (controller_service.h) is the real one (store + engine); tests use fakes.
//
// Every object a Service returns carries metadata.namespace, which the server uses to decide
// visibility. A Service never returns secret values (they are write-only).
// Threading: called from many server threads at once; implementations must be thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/list_page.h"
#include "api/metrics.h"
#include "base/status.h"

namespace rsl {
class Db;  // base/sqlite.h
}  // namespace rsl

namespace rsl::api {

using Json = nlohmann::json;

inline constexpr char kApiVersion[] = "aiengine.volc.com/v1";

//! A piece of a step's captured log (secret values already masked).
struct LogChunk {
  std::string data;
  int64_t next_offset = 0;  //!< where the next piece starts in the step's log
  bool finished = false;    //!< the step is terminal and its log has been read to the end
};

//! One step's log read forward from its start: attempt 1's file, then "--- attempt 2 ---\n"
//! and attempt 2's file, and so on. Holds at most one file open. Not thread-safe: one reader
//! at a time.
class StepLog {
 public:
  virtual ~StepLog() = default;
  virtual const std::string& step() const = 0;
  //! The next piece: at most `max_bytes`, ending after a newline when the piece holds one (a
  //! secret value is masked within a piece, so pieces split at line ends). While the step
  //! runs, only whole lines. Empty and not finished: nothing new yet; ask again later.
  virtual Result<LogChunk> Next(int64_t max_bytes) = 0;
  //! Moves the reader to the last `bytes` of the step's log (of its latest attempt), at a line
  //! start, so a huge log opens at its tail without reading the rest. REQUIRES: before the
  //! first Next(). A reader that cannot seek (the default) stays at the start.
  virtual Status SeekTail(int64_t /*bytes*/) { return Status::Ok(); }
};

class Service {
 public:
  virtual ~Service() = default;

  //! Decides a submission's namespace from its YAML's metadata.namespace ("" when the YAML
  //! names none or cannot be read): the namespace, or the error that refuses the submission
  //! (a namespace the caller may not write to, one that contradicts the request's).
  using NamespaceDecider = std::function<Result<std::string>(const std::string& yaml_namespace)>;
  //! Written in the very transaction that records an accepted submission, given the new
  //! workload's id and name (engine::SubmitOptions::commit_also): the router's audit entry,
  //! so that no accepted submission is ever without one. Empty: nothing.
  using AcceptedWrite = std::function<Status(Db*, const std::string& id, const std::string& name)>;

  //! Admits a workload (YAML text, named `source_name` in messages) into the namespace
  //! `decide` chooses. `decide` is called exactly once, as soon as the YAML is read (one
  //! parse of the text, not a probe first), or with "" when the text is not readable YAML;
  //! its error is then the only error (nothing about the spec is reported to a caller it
  //! refuses). Relative local data URIs are made absolute against `base_dir` (the directory
  //! of the client's file), and refused (SPEC_INVALID) when it is "".
  //! Parse/validation errors are returned as Errors (all of them, in `errors`). Returns the
  //! Workload object (phase PENDING, or REJECTED once admission has failed). `also` runs in
  //! the transaction that records the submission; its failure fails the submission.
  virtual Result<Json> Submit(const std::string& yaml, const std::string& source_name,
                              const std::string& base_dir, const NamespaceDecider& decide,
                              const std::string& subject, Errors* errors,
                              const AcceptedWrite& also) = 0;
  //! Submit into `ns` whatever the YAML says.
  Result<Json> SubmitTo(const std::string& yaml, const std::string& source_name,
                        const std::string& base_dir, const std::string& ns,
                        const std::string& subject, Errors* errors) {
    return Submit(yaml, source_name, base_dir,
                  [ns](const std::string&) -> Result<std::string> { return ns; }, subject, errors,
                  {});
  }
  //! The Workload object with status (phase, steps, progress, usage). NOT_FOUND if unknown.
  virtual Result<Json> GetWorkload(const std::string& id) = 0;
  //! The Workload object with the steps `view` asks for (list_page.h): status.steps is the
  //! page (pipeline order), status.stepCounts counts every step by phase, and when more steps
  //! follow status.stepsContinue is the next page's token. When the page does not hold every
  //! step, status.activeSteps has the steps that need attention (kActiveStepsPerPhase per
  //! phase) and status.currentStep is still the run's. INVALID_ARGUMENT for a token this API
  //! did not give. The default answers GetWorkload (every step, no paging).
  virtual Result<Json> GetWorkloadView(const std::string& id, const StepsView& /*view*/) {
    return GetWorkload(id);
  }
  //! The namespace of workload `id` (NOT_FOUND if unknown), without building the object: what
  //! the server checks before every read of a workload's parts. The default asks GetWorkload.
  virtual Result<std::string> NamespaceOf(const std::string& id);
  //! WorkloadList of `namespaces` (empty = all), newest first; `name` filters (history).
  virtual Result<Json> ListWorkloads(const std::vector<std::string>& namespaces,
                                     const std::string& name) = 0;
  //! A page of the list (GET /api/v1/workloads, list_page.h): AIWorkloadList with the items of
  //! `query` newest first (by status.createdAtMs, then id) and, when paging (a limit or a
  //! token), metadata.total (every match) and metadata.continue when more follow.
  //! INVALID_ARGUMENT for a token this API did not give. The default cuts ListWorkloads in
  //! memory; the real service reads one page from the store's index.
  virtual Result<Json> ListWorkloadsPage(const WorkloadListQuery& query);
  //! Canonical spec (secrets redacted), placement, per-step timings and exit codes.
  virtual Result<Json> Describe(const std::string& id) = 0;
  //! Describe with the steps of `view` (as GetWorkloadView) and the run's last
  //! view.event_limit events; eventCount is every event of the run. The default answers
  //! Describe (everything).
  virtual Result<Json> DescribeView(const std::string& id, const StepsView& /*view*/) {
    return Describe(id);
  }
  virtual Result<Json> Events(const std::string& id) = 0;
  //! The events of `id` after sequence number `after_seq` (an EventList). The default filters
  //! Events(); the real service reads only the new rows.
  virtual Result<Json> EventsSince(const std::string& id, int64_t after_seq);
  //! The last `limit` events of `id` (an EventList, oldest first; 0 = every event): where a
  //! watcher starts. The default cuts Events(); the real service reads only those rows.
  virtual Result<Json> LastEvents(const std::string& id, int64_t limit);
  //! A number that grows whenever any workload changes phase or records an event (the last
  //! event's sequence number), so a watcher re-reads only after a change; -1 when the service
  //! cannot tell (then watchers re-read on every poll).
  virtual int64_t ChangeSeq() { return -1; }
  //! Readers for the logs of `steps` of workload `id`, in that order, each at its start. One
  //! store read for all of them, so serving every step of a run is linear in their number.
  //! A serving step's log is its replicas' (one reader per replica that wrote, named
  //! "<step> replica <i>"), or only replica `replica`'s when set. NOT_FOUND for an unknown
  //! workload, step or replica; INVALID_ARGUMENT for `replica` and a batch step.
  virtual Result<std::vector<std::unique_ptr<StepLog>>> OpenLogs(
      const std::string& id, const std::vector<std::string>& steps, std::optional<int> replica) = 0;
  //! format "" (rsl's own JSON, with a `text` rendering) or "openlineage" (RunEvent JSON).
  virtual Result<Json> Lineage(const std::string& id, const std::string& format) = 0;
  virtual Result<Json> Cancel(const std::string& id, const std::string& subject) = 0;
  //! Runs the stored snapshot of `id` again as a new version; returns the new Workload.
  virtual Result<Json> Rollback(const std::string& id, const std::string& subject) = 0;

  virtual Result<Json> ListNodes(const std::string& capability) = 0;
  virtual Result<Json> ClusterStatus() = 0;

  virtual Status PutConfigMap(const std::string& ns, const std::string& name,
                              const std::map<std::string, std::string>& data) = 0;
  virtual Result<Json> ListConfigMaps(const std::string& ns) = 0;
  //! Stores a secret; later reads show its keys, never its values. `warnings` gets what its
  //! creator should know (a value too short to be masked in logs).
  virtual Status PutSecret(const std::string& ns, const std::string& name,
                           const std::map<std::string, std::string>& data,
                           std::vector<std::string>* warnings) = 0;
  virtual Result<Json> ListSecrets(const std::string& ns) = 0;

  //! Registered datasources (credentials redacted) and environments ("images"), when the
  //! controller is built with the data / model layers; empty lists otherwise.
  virtual Result<Json> ListDatasources() = 0;
  virtual Result<Json> ListEnvironments() = 0;

  //! Sets the scrape-time gauges (workloads/steps by phase).
  virtual void CollectMetrics(Metrics* metrics) = 0;
};

}  // namespace rsl::api
