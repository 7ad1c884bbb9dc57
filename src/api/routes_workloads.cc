// Workloads: submit, list, status, describe, events, lineage, logs, cancel, rollback.

#include <algorithm>
#include <memory>
#include <regex>

#include "api/events_stream.h"
#include "api/routes.h"
#include "base/codes.h"
#include "base/strings.h"

namespace rsl::api::routes {

namespace {

constexpr size_t kMaxAuditIdChars = 128;  // an id from a path is recorded, but not a huge one
// A followed log starts this far from its end unless told: a screenful or two of lines.
constexpr int64_t kDefaultWatchTailBytes = 64 << 10;

const std::regex kIdPattern("wl-[0-9]{8}-[0-9a-f]{8}");

Error NotFoundId(const std::string& id) {
  return Error(codes::kNotFound, "workload " + Quote(id) + " not found")
      .Value(id)
      .Hint("list workloads with `seedctl workload list`; ids look like wl-YYYYMMDD-<8 hex>");
}

std::string NamespaceOf(const Json& workload) {
  return workload["metadata"].value("namespace", std::string());
}

// The namespace of the path's {id}, when the caller may see it (404 otherwise).
Result<std::string> VisibleNamespace(const Services& s, const RequestContext& c) {
  std::string id = c.PathParam("id");
  if (!std::regex_match(id, kIdPattern)) return NotFoundId(id);
  auto ns = s.service->NamespaceOf(id);
  if (!ns.ok()) return ns.error();
  if (!c.who.CanRead(*ns)) return NotFoundId(id);
  return ns;
}

// The workload of the path's {id}, when the caller may see it (404 otherwise).
Result<Json> VisibleWorkload(const Services& s, const RequestContext& c) {
  auto ns = VisibleNamespace(s, c);
  if (!ns.ok()) return ns.error();
  return s.service->GetWorkload(c.PathParam("id"));
}

// `ns` "" = from the YAML, else the caller's default. The namespace is decided, and the
// caller authorized, inside the service's one parse of the YAML (Service::NamespaceDecider).
Result<Reply> Submit(const Services& s, RequestContext& c, std::string ns) {
  std::string chosen = ns.empty() ? c.who.DefaultNamespace() : ns;  // for the audit record
  bool refused = false;  // by the decision below: its error stands alone
  auto decide = [&](const std::string& yaml_ns) -> Result<std::string> {
    if (!ns.empty() && !yaml_ns.empty() && ns != yaml_ns) {
      refused = true;
      return Error(codes::kInvalidArgument, "the namespace from the provided object " +
                                                Quote(yaml_ns) + " does not match the namespace " +
                                                Quote(ns))
          .Path("metadata.namespace")
          .Hint("drop -n/--namespace or make it match metadata.namespace");
    }
    if (ns.empty() && !yaml_ns.empty()) chosen = yaml_ns;
    if (!c.who.CanWrite(chosen)) {
      refused = true;
      Error e = Forbidden(c.who, "submit workloads", chosen);
      RecordAudit(s, c.who, "submit", "workloads", chosen, "", e, "");
      return e;
    }
    return chosen;
  };
  Errors errors;
  std::string source = c.req.Header("X-Rsl-Source");
  if (source.empty() || source.size() > 255) source = "workload.yaml";
  std::string base_dir = c.req.Header("X-Rsl-Base-Dir");  // of relative data URIs
  // An accepted submission's audit entry is written in the transaction that records it (one
  // commit, not two, and never one without the other); the entry of a refused one after.
  bool audited = false;
  auto audit = [&](Db* db, const std::string& id, const std::string& name) {
    Status st = s.audit->AppendIn(
        db, MakeAuditEntry(c.who, "submit", "workloads", chosen, id, Status::Ok(), name));
    audited = st.ok();
    return st;
  };
  auto w = s.service->Submit(c.req.body, source, base_dir, decide, c.who.subject, &errors, audit);
  if (!w.ok()) {
    if (refused) return w.error();
    if (errors.empty()) errors.push_back(w.error());
    RecordAudit(s, c.who, "submit", "workloads", chosen, "", w.error(), "");
    c.errors = errors;
    return Error(errors.front());
  }
  std::string id = (*w)["metadata"].value("id", std::string());
  if (!audited) {  // a service that took no audit writer
    RecordAudit(s, c.who, "submit", "workloads", chosen, id, Status::Ok(),
                (*w)["metadata"].value("name", std::string()));
  }
  return JsonReply(*w, 201);
}

// A non-negative integer query parameter; `fallback` when absent.
Result<int64_t> IntQuery(const RequestContext& c, const std::string& key, int64_t fallback) {
  std::string v = c.Query(key);
  if (v.empty()) return fallback;
  if (v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos) {
    return Error(codes::kInvalidArgument,
                 "query parameter " + key + "=" + Quote(v) + " is not a non-negative integer")
        .Path(key)
        .Value(v)
        .Hint("e.g. " + key + "=100");
  }
  return static_cast<int64_t>(std::stoll(v));
}

// The namespaces a list request names: ?allNamespaces=true (the caller's, or every one for an
// admin or a "*" token), else ?namespace or the caller's default.
std::vector<std::string> ListNamespaces(const RequestContext& c) {
  if (c.Query("allNamespaces") == "true") {
    const std::vector<std::string>& nss = c.who.namespaces;
    bool all = c.who.IsClusterAdmin() || std::find(nss.begin(), nss.end(), "*") != nss.end();
    return all ? std::vector<std::string>{} : nss;
  }
  std::string ns = c.Query("namespace");
  return {ns.empty() ? c.who.DefaultNamespace() : ns};
}

// ?phase=P and ?label=K=V keep the matching items; ?limit=L&continue=C: the L items after
// the one token C names and, when more follow, metadata.continue (keyset paging, list_page.h).
Result<Reply> ListWorkloadsIn(const Services& s, RequestContext& c,
                              const std::vector<std::string>& namespaces) {
  for (const auto& ns : namespaces) {
    if (!c.who.CanRead(ns)) return Forbidden(c.who, "list workloads", ns);
  }
  WorkloadListQuery q;
  q.namespaces = namespaces;
  q.name = c.Query("name");
  q.phase = c.Query("phase");
  auto limit = IntQuery(c, "limit", 0);
  if (!limit.ok()) return limit.error();
  q.limit = *limit;
  q.continue_token = c.Query("continue");
  std::string label = c.Query("label");
  if (!label.empty()) {
    size_t eq = label.find('=');
    if (eq == std::string::npos) {
      return Error(codes::kInvalidArgument, "label filter " + Quote(label) + " is not KEY=VALUE")
          .Path("label")
          .Value(label)
          .Hint("e.g. label=team=risk");
    }
    q.label_key = label.substr(0, eq);
    q.label_value = label.substr(eq + 1);
  }
  auto l = s.service->ListWorkloadsPage(q);
  if (!l.ok()) return l.error();
  return JsonReply(*l);
}

// A read of the visible workload {id} answered by `read`.
template <typename Read>
Result<Reply> ReadVisible(const Services& s, RequestContext& c, Read read) {
  auto ns = VisibleNamespace(s, c);
  if (!ns.ok()) return ns.error();
  Result<Json> j = read(c.PathParam("id"));
  if (!j.ok()) return j.error();
  return JsonReply(*j);
}

enum class Change { kCancel, kRollback };

Result<Reply> ChangeWorkload(const Services& s, RequestContext& c, Change change) {
  const std::string verb = change == Change::kCancel ? "cancel" : "rollback";
  const std::string id = c.PathParam("id");
  auto w = VisibleWorkload(s, c);
  if (!w.ok()) {
    // A write answered 404 is a denied write too. It is recorded under the object's own
    // namespace when the object exists (its readers see who tried; the caller learns
    // nothing), else under none (admins see it).
    std::string owner;
    if (std::regex_match(id, kIdPattern)) {
      auto o = s.service->GetWorkload(id);
      if (o.ok()) owner = NamespaceOf(*o);
    }
    RecordAudit(s, c.who, verb, "workloads", owner, id.substr(0, kMaxAuditIdChars), w.error(),
                owner.empty() ? "no such workload" : "outside the caller's namespaces");
    return w.error();
  }
  std::string ns = NamespaceOf(*w);
  if (!c.who.CanWrite(ns)) {
    Error e = Forbidden(c.who, verb + " workloads", ns);
    RecordAudit(s, c.who, verb, "workloads", ns, id, e, "");
    return e;
  }
  auto r = change == Change::kCancel ? s.service->Cancel(id, c.who.subject)
                                     : s.service->Rollback(id, c.who.subject);
  if (!r.ok()) {
    RecordAudit(s, c.who, verb, "workloads", ns, id, r.error(), "");
    return r.error();
  }
  if (change == Change::kRollback) {
    std::string new_id = (*r)["metadata"].value("id", std::string());
    RecordAudit(s, c.who, verb, "workloads", ns, new_id, Status::Ok(), "rolled back from " + id);
    return JsonReply(*r, 201);
  }
  RecordAudit(s, c.who, verb, "workloads", ns, id, Status::Ok(), "");
  return JsonReply(*r);
}

// GET .../logs as a stream: each step's log in order (with "==> step <==" headers when there
// are several), read piece by piece on the server's stream thread, so memory is bounded by a
// piece whatever the log's size. Without follow a step's log ends where it is now (a running
// step's partial last line is left out); with follow each step is read until it ends.
class LogStream : public StreamSource {
 public:
  LogStream(std::vector<std::unique_ptr<StepLog>> logs, bool headers, bool follow)
      : logs_(std::move(logs)), headers_(headers), follow_(follow) {}

  State Next(size_t max_bytes, std::string* out) override {
    while (index_ < logs_.size()) {
      StepLog& log = *logs_[index_];
      if (headers_ && !header_sent_) {
        *out += "==> " + log.step() + " <==\n";
        header_sent_ = true;
      }
      auto chunk = log.Next(static_cast<int64_t>(max_bytes));
      if (!chunk.ok()) {
        *out += "error: " + chunk.error().ToString() + "\n";
        return State::kDone;
      }
      if (!chunk->data.empty()) {
        step_bytes_ += chunk->data.size();
        last_byte_ = chunk->data.back();
        *out += chunk->data;
        if (!chunk->finished) return State::kMore;
      }
      if (!chunk->finished && follow_) return State::kWait;  // the step runs: poll again
      // The step's log ends here. Without follow, a header never ends up mid-line.
      if (!follow_ && headers_ && step_bytes_ > 0 && last_byte_ != '\n') *out += "\n";
      logs_[index_++].reset();  // closes its file
      header_sent_ = false;
      step_bytes_ = 0;
      if (out->size() >= max_bytes) return State::kMore;
    }
    return State::kDone;
  }

 private:
  std::vector<std::unique_ptr<StepLog>> logs_;
  bool headers_;
  bool follow_;
  size_t index_ = 0;
  bool header_sent_ = false;
  size_t step_bytes_ = 0;
  char last_byte_ = '\n';
};

}  // namespace

Result<Reply> SubmitWorkload(const Services& s, RequestContext& c) {
  return Submit(s, c, c.Query("namespace"));
}

Result<Reply> SubmitWorkloadInNamespace(const Services& s, RequestContext& c) {
  return Submit(s, c, c.PathParam("ns"));
}

Result<Reply> ListWorkloads(const Services& s, RequestContext& c) {
  return ListWorkloadsIn(s, c, ListNamespaces(c));
}

Result<Reply> ListWorkloadsInNamespace(const Services& s, RequestContext& c) {
  return ListWorkloadsIn(s, c, {c.PathParam("ns")});
}

namespace {

// ?limit=L (steps per page; 0 = every step), ?continue=C (status.stepsContinue of the page
// before) and, for describe, ?eventLimit=E (the last E events; 0 = every event). Without
// them, a page of kDefaultStepLimit steps and the last kDefaultEventLimit events.
Result<StepsView> StepsViewOf(const RequestContext& c) {
  StepsView view;
  auto limit = IntQuery(c, "limit", kDefaultStepLimit);
  if (!limit.ok()) return limit.error();
  view.limit = *limit;
  view.continue_token = c.Query("continue");
  auto events = IntQuery(c, "eventLimit", kDefaultEventLimit);
  if (!events.ok()) return events.error();
  view.event_limit = *events;
  return view;
}

}  // namespace

Result<Reply> GetWorkload(const Services& s, RequestContext& c) {
  auto view = StepsViewOf(c);
  if (!view.ok()) return view.error();
  return ReadVisible(s, c,
                     [&](const std::string& id) { return s.service->GetWorkloadView(id, *view); });
}

Result<Reply> DescribeWorkload(const Services& s, RequestContext& c) {
  auto view = StepsViewOf(c);
  if (!view.ok()) return view.error();
  return ReadVisible(s, c,
                     [&](const std::string& id) { return s.service->DescribeView(id, *view); });
}

Result<Reply> WorkloadEvents(const Services& s, RequestContext& c) {
  return ReadVisible(s, c, [&](const std::string& id) { return s.service->Events(id); });
}

Result<Reply> WorkloadLineage(const Services& s, RequestContext& c) {
  return ReadVisible(
      s, c, [&](const std::string& id) { return s.service->Lineage(id, c.Query("format")); });
}

namespace {

// The steps of workload object `w`, and NOT_FOUND (with the closest name) when `step` is
// given and is not one of them.
Result<std::vector<std::string>> StepsOf(const Json& w, const std::string& step) {
  std::vector<std::string> steps;
  for (const auto& st : w["status"].value("steps", Json::array())) {
    steps.push_back(st.value("name", std::string()));
  }
  if (!step.empty() && std::find(steps.begin(), steps.end(), step) == steps.end()) {
    std::string id = w["metadata"].value("id", std::string());
    std::string close = ClosestMatch(step, steps);
    return Error(codes::kNotFound, "workload " + id + " has no step " + Quote(step))
        .Value(step)
        .Hint(close.empty() ? "steps: " + Join(steps, ", ") : "did you mean '" + close + "'?");
  }
  return steps;
}

}  // namespace

Result<Reply> WorkloadLogs(const Services& s, RequestContext& c) {
  auto w = VisibleWorkload(s, c);
  if (!w.ok()) return w.error();
  std::string id = c.PathParam("id");
  std::string step = c.Query("step");
  auto steps = StepsOf(*w, step);
  if (!steps.ok()) return steps.error();
  auto tail = IntQuery(c, "tailBytes", 0);
  if (!tail.ok()) return tail.error();
  bool follow = c.Query("follow") == "true";
  std::optional<int> replica;
  if (!c.Query("replica").empty()) {
    auto n = IntQuery(c, "replica", 0);
    if (!n.ok()) return n.error();
    if (step.empty()) {
      return Error(codes::kInvalidArgument, "replica=" + c.Query("replica") + " needs step=")
          .Path("replica")
          .Value(c.Query("replica"))
          .Hint("name the serving step: seedctl workload logs --step STEP --replica N");
    }
    replica = int(std::min<int64_t>(*n, 1'000'000));
  }
  auto logs =
      s.service->OpenLogs(id, step.empty() ? *steps : std::vector<std::string>{step}, replica);
  if (!logs.ok()) return logs.error();
  // A header per log when there are several (steps, or a serving step's replicas).
  bool headers = (step.empty() && steps->size() > 1) || logs->size() > 1;
  if (*tail > 0) {
    for (auto& log : *logs) RSL_RETURN_IF_ERROR(log->SeekTail(*tail));
  }
  c.res.SetStream("text/plain; charset=utf-8",
                  std::make_shared<LogStream>(std::move(*logs), headers, follow));
  return Reply{};
}

Result<Reply> WatchWorkload(const Services& s, RequestContext& c) {
  auto ns = VisibleNamespace(s, c);
  if (!ns.ok()) return ns.error();
  std::string id = c.PathParam("id");
  std::string step = c.Query("logStep");
  bool all_logs = c.Query("allLogs") == "true";
  std::vector<std::unique_ptr<StepLog>> logs;
  if (!step.empty() || all_logs) {
    auto w = s.service->GetWorkload(id);
    if (!w.ok()) return w.error();
    auto steps = StepsOf(*w, step);
    if (!steps.ok()) return steps.error();
    auto tail = IntQuery(c, "tailBytes", kDefaultWatchTailBytes);
    if (!tail.ok()) return tail.error();
    auto opened = s.service->OpenLogs(id, step.empty() ? *steps : std::vector<std::string>{step},
                                      std::nullopt);
    if (!opened.ok()) return opened.error();
    logs = std::move(*opened);
    if (*tail > 0) {
      for (auto& log : logs) RSL_RETURN_IF_ERROR(log->SeekTail(*tail));
    }
  }
  c.res.SetHeader("Cache-Control", "no-store");
  c.res.SetStream("text/event-stream; charset=utf-8",
                  std::make_shared<WorkloadWatch>(s.service, id, std::move(logs)));
  return Reply{};
}

Result<Reply> WatchWorkloads(const Services& s, RequestContext& c) {
  std::vector<std::string> namespaces = ListNamespaces(c);
  for (const auto& ns : namespaces) {
    if (!c.who.CanRead(ns)) return Forbidden(c.who, "watch workloads", ns);
  }
  c.res.SetHeader("Cache-Control", "no-store");
  c.res.SetStream("text/event-stream; charset=utf-8",
                  std::make_shared<WorkloadListWatch>(s.service, namespaces, c.Query("name")));
  return Reply{};
}

Result<Reply> CancelWorkload(const Services& s, RequestContext& c) {
  return ChangeWorkload(s, c, Change::kCancel);
}

Result<Reply> RollbackWorkload(const Services& s, RequestContext& c) {
  return ChangeWorkload(s, c, Change::kRollback);
}

}  // namespace rsl::api::routes
