// The k8s backend's serving half (k8s/backend.h): a serving step is a Deployment (replicas,
// rolling update, readiness probe), a ClusterIP Service and, when it scales, an autoscaling/v2
// HPA, all owned by the run's owner ConfigMap; an informer on Deployments turns their status
// into the events the other backends send (ServingReady, ScaledUp/Down, ServingNotReady).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "base/codes.h"
#include "base/strings.h"
#include "k8s/backend.h"
#include "k8s/backend_internal.h"
#include "k8s/codes.h"
#include "k8s/render.h"
#include "spec/names.h"

namespace rsl::k8s {

using backend::AttemptEvent;
using backend::AttemptExit;
using backend::ExitKind;
using backend::LaunchSpec;
using nlohmann::json;

namespace {

std::string HpasPath(const std::string& ns) {
  return "/apis/autoscaling/v2/namespaces/" + ns + "/horizontalpodautoscalers";
}

// An HPA only where there is something to decide.
bool Scales(const backend::ServingLaunch& sv) {
  return sv.autoscaling.max_replicas > sv.autoscaling.min_replicas &&
         sv.autoscaling.target_utilization > 0;
}

// What a serving step's Deployment selects its Pods by, and its Service routes to: stable
// across versions (a Deployment's selector cannot change), so no run and no attempt.
json ServingSelectorOf(const LaunchSpec& s) {
  return ServingSelector(s.workload_name, s.namespace_, s.step);
}

// How often a ready version repeats its takeover (dropping the older one) while the cache
// still shows the older one serving: a patch that lost a race is sent again.
constexpr int64_t kTakeoverResendMs = 2000;

int64_t IntAt(const json& obj, const char* section, const char* key) {
  auto sec = obj.find(section);
  if (sec == obj.end() || !sec->is_object()) return 0;
  auto it = sec->find(key);
  return it != sec->end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

// What a rollback restores of one object: its labels, owners and spec (null: it was absent).
json Keep(const Result<json>& obj) {
  if (!obj.ok()) return nullptr;
  const json meta = obj->value("metadata", json::object());
  return {{"labels", meta.value("labels", json::object())},
          {"ownerReferences", meta.value("ownerReferences", json::array())},
          {"spec", obj->value("spec", json::object())}};
}

// The owners of `obj` that control it (the run whose attempt holds it).
json ControllerOwners(const json& obj) {
  json out = json::array();
  for (const auto& r :
       obj.value("metadata", json::object()).value("ownerReferences", json::array())) {
    if (r.value("controller", false)) out.push_back(r);
  }
  return out;
}

// Creates `obj` at collection `path` with owners `owners`, or (409) merges it into the object
// there: labels, annotations, owners and spec (`diff_spec`: as a patch from the stored spec,
// which also drops fields `obj` lacks; else merged, as a Service's spec holds its clusterIP).
Result<json> Upsert(ApiClient* c, const std::string& path, json obj, const json& owners,
                    bool diff_spec) {
  obj["metadata"]["ownerReferences"] = owners;
  auto made = c->Create(path, obj);
  if (made.ok() || made.error().code != codes::kConflict) return made;
  const std::string item = path + "/" + obj["metadata"].value("name", "");
  auto cur = c->Get(item);
  if (!cur.ok()) return cur.error();
  const json meta = cur->value("metadata", json::object());
  json patch = {
      {"metadata",
       {{"labels",
         MergePatchBetween(meta.value("labels", json::object()), obj["metadata"]["labels"])},
        {"annotations", obj["metadata"]["annotations"]},
        {"ownerReferences", owners}}},
      {"spec", diff_spec ? MergePatchBetween(cur->value("spec", json::object()), obj["spec"])
                         : obj["spec"]}};
  return c->MergePatch(item, patch);
}

// Makes object `name` of collection `path` what `kept` (Keep) says, with `annotations` merged
// in: patched where it is, created as `api_version`/`kind` where it is not, deleted where
// `kept` is null.
Status Restore(ApiClient* c, const std::string& path, const std::string& name,
               const char* api_version, const char* kind, const json& kept, const json& annotations,
               bool diff_spec) {
  const std::string item = path + "/" + name;
  auto cur = c->Get(item);
  if (!cur.ok() && cur.error().code != codes::kNotFound) return cur.error();
  if (!kept.is_object()) {
    if (!cur.ok()) return Status::Ok();
    auto r = c->Delete(item);
    return r.ok() || r.error().code == codes::kNotFound ? Status::Ok() : Status(r.error());
  }
  if (!cur.ok()) {
    json obj = {{"apiVersion", api_version},
                {"kind", kind},
                {"metadata",
                 {{"name", name},
                  {"labels", kept["labels"]},
                  {"annotations", annotations},
                  {"ownerReferences", kept["ownerReferences"]}}},
                {"spec", kept["spec"]}};
    auto made = c->Create(path, obj);
    return made.ok() ? Status::Ok() : Status(made.error());
  }
  const json meta = cur->value("metadata", json::object());
  json patch = {
      {"metadata",
       {{"labels", MergePatchBetween(meta.value("labels", json::object()), kept["labels"])},
        {"annotations", annotations},
        {"ownerReferences", kept["ownerReferences"]}}},
      {"spec", diff_spec ? MergePatchBetween(cur->value("spec", json::object()), kept["spec"])
                         : kept["spec"]}};
  auto patched = c->MergePatch(item, patch);
  return patched.ok() ? Status::Ok() : Status(patched.error());
}

}  // namespace

json MergePatchBetween(const json& from, const json& to) {
  if (!from.is_object() || !to.is_object()) return to;
  json patch = json::object();
  for (const auto& [k, v] : from.items()) {
    if (!to.contains(k)) patch[k] = nullptr;
  }
  for (const auto& [k, v] : to.items()) {
    auto f = from.find(k);
    if (f == from.end()) {
      patch[k] = v;
    } else if (*f != v) {
      patch[k] = f->is_object() && v.is_object() ? MergePatchBetween(*f, v) : v;
    }
  }
  return patch;
}

Status K8sBackend::CheckServing(const spec::Workload& workload, const spec::Step& step) {
  // The HPA carries every setting but one: a stabilization window over an hour.
  const std::optional<spec::Autoscaling>& as = step.effective.autoscaling;
  if (as && as->scale_down_delay_ms > kMaxStabilizationSeconds * 1000) {
    std::string path = "spec.resources.autoscaling.scaleDownDelay";
    for (size_t i = 0; i < workload.pipeline.steps.size(); ++i) {
      if (workload.pipeline.steps[i].name == step.name && step.resources.autoscaling) {
        path = spec::StepPath(i) + ".resources.autoscaling.scaleDownDelay";
      }
    }
    return Error(codes::kK8sNotRepresentable,
                 "scaleDownDelay is longer than the HorizontalPodAutoscaler's longest "
                 "stabilization window (1h)")
        .Path(path)
        .Value(std::to_string(CeilSeconds(as->scale_down_delay_ms)) + "s")
        .Hint("use a scaleDownDelay of at most 1h on Kubernetes");
  }
  return Status::Ok();
}

Result<std::vector<json>> K8sBackend::ServingObjectsFor(const LaunchSpec& spec,
                                                        const std::string& owner_uid) {
  if (!spec.serving) {
    return Error(codes::kInvalidArgument, "step " + Quote(spec.step) + " is not a serving step");
  }
  const backend::ServingLaunch& sv = *spec.serving;
  const int64_t port = ServingPort(spec);
  LaunchSpec replica = spec;
  replica.env["RSL_PORT"] = std::to_string(port);
  replica.env.erase("RSL_REPLICA");  // a Deployment numbers nothing: the Pod's name instead
  replica.timeout_ms.reset();        // a serving step runs until it is stopped
  auto pod = PodFor(replica, owner_uid);
  if (!pod.ok()) return pod.error();
  json pod_spec = (*pod)["spec"];
  pod_spec["restartPolicy"] = "Always";
  json& c = pod_spec["containers"][0];
  c["env"].push_back(
      {{"name", "RSL_REPLICA"},
       {"valueFrom", {{"fieldRef", {{"apiVersion", "v1"}, {"fieldPath", "metadata.name"}}}}}});
  std::sort(c["env"].begin(), c["env"].end(),
            [](const json& a, const json& b) { return a["name"] < b["name"]; });
  c["ports"] = json::array({{{"name", "http"}, {"containerPort", port}, {"protocol", "TCP"}}});
  c["readinessProbe"] = {
      {"httpGet", {{"path", sv.readiness.path}, {"port", sv.readiness.port.value_or(port)}}},
      {"periodSeconds", CeilSeconds(sv.readiness.period_ms)},
      {"failureThreshold", std::max<int64_t>(1, sv.readiness.failure_threshold)}};

  const std::string ns = (*pod)["metadata"]["namespace"];
  const std::string name = ServingObjectName(spec.namespace_, ns, spec.workload_name, spec.step);
  json labels = AttemptLabels(spec);
  json meta = {{"name", name},
               {"namespace", ns},
               {"labels", labels},
               {"annotations", {{kAnnotationAttempt, spec.attempt_id}}},
               {"ownerReferences", (*pod)["metadata"]["ownerReferences"]}};
  const json selector = ServingSelectorOf(spec);
  std::vector<json> out;
  out.push_back(
      {{"apiVersion", "apps/v1"},
       {"kind", "Deployment"},
       {"metadata", meta},
       {"spec",
        {{"replicas", std::max<int64_t>(1, sv.autoscaling.min_replicas)},
         {"selector", {{"matchLabels", selector}}},
         {"strategy", ServingStrategy()},
         {"progressDeadlineSeconds", CeilSeconds(sv.ready_timeout_ms)},
         {"template",
          {{"metadata",
            {{"labels", labels}, {"annotations", {{kAnnotationAttempt, spec.attempt_id}}}}},
           {"spec", pod_spec}}}}}});
  out.push_back(ServingService(meta, selector, port));
  if (Scales(sv)) {
    auto hpa = ServingAutoscaler(meta, name, sv.autoscaling);
    if (!hpa.ok()) return hpa.error();
    out.push_back(std::move(*hpa));
  }
  return out;
}

Status K8sBackend::LaunchServing(const LaunchSpec& spec, const std::string& ns) {
  EnsureWatcher(DeploymentsPath(ns));
  std::string owner_uid;
  RSL_RETURN_IF_ERROR(EnsureRunObjects(spec, ns, &owner_uid));
  auto objects = ServingObjectsFor(spec, owner_uid);
  if (!objects.ok()) return objects.error();
  json deploy = (*objects)[0];
  const json& service = (*objects)[1];
  const json* hpa = objects->size() > 2 ? &(*objects)[2] : nullptr;
  const std::string name = deploy["metadata"]["name"];
  const json owners = deploy["metadata"]["ownerReferences"];
  RSL_RETURN_IF_ERROR(CreateAttemptSecret(
      spec, ns, AttemptPodName(spec.workload_name, spec.run_id, spec.step, spec.attempt), owners));
  const std::string item = DeploymentsPath(ns) + "/" + name;
  std::string previous;  // the attempt that keeps serving while this one rolls out
  bool adopted = false;
  json svc_now;
  auto made = client_.Create(DeploymentsPath(ns), deploy);
  if (!made.ok() && made.error().code != codes::kConflict) return made.error();
  json keep_owners = owners;  // the Service's and HPA's owners
  if (!made.ok()) {
    auto cur = client_.Get(item);
    if (!cur.ok()) return cur.error();
    const std::string holder = AttemptAnnotation(*cur);
    if (holder == spec.attempt_id) {
      // A retried create, a relaunch after a restart: left as it is.
      adopted = true;
    } else {
      // A new version: the one serving now (or, while another rollout is in flight, the one
      // still serving behind it) keeps serving until this one is ready (ReconcileServing);
      // until then both runs own the objects, and the rollback annotation holds what to go
      // back to if this one never gets ready.
      previous = Annotation(*cur, kAnnotationPrevious);
      std::string rollback = previous.empty() ? "" : Annotation(*cur, kAnnotationRollback);
      if (previous.empty() || rollback.empty()) {
        previous = holder;
        rollback = json{{"deployment", Keep(cur)},
                        {"service", Keep(client_.Get(ServicesPath(ns) + "/" + name))},
                        {"hpa", Keep(client_.Get(HpasPath(ns) + "/" + name))}}
                       .dump();
      }
      json back = json::parse(rollback, nullptr, false);
      for (json r :
           back.value("deployment", json::object()).value("ownerReferences", json::array())) {
        r["controller"] = false;  // keeps them alive; this run's owner controls them
        keep_owners.push_back(r);
      }
      // As many replicas as the serving version runs, within this version's range.
      const backend::ServingLaunch& sv = *spec.serving;
      if (Scales(sv)) {
        int64_t now = IntAt(*cur, "spec", "replicas");
        deploy["spec"]["replicas"] = std::clamp<int64_t>(
            now, std::max<int64_t>(1, sv.autoscaling.min_replicas), sv.autoscaling.max_replicas);
      }
      const json meta = cur->value("metadata", json::object());
      json patch = {
          {"metadata",
           {{"labels",
             MergePatchBetween(meta.value("labels", json::object()), deploy["metadata"]["labels"])},
            {"annotations",
             {{kAnnotationAttempt, spec.attempt_id},
              {kAnnotationPrevious, previous},
              {kAnnotationRollback, rollback}}},
            {"ownerReferences", keep_owners}}},
          {"spec", MergePatchBetween(cur->value("spec", json::object()), deploy["spec"])}};
      auto patched = client_.MergePatch(item, patch);
      if (!patched.ok()) return patched.error();
    }
  }
  // A launch that fails half-way through a rollout leaves the older version serving.
  auto failed = [&](const Error& e) -> Status {
    if (!previous.empty()) (void)RollBackServing(ns, name, spec.attempt_id);
    return e;
  };
  if (adopted) {
    if (auto got = client_.Get(ServicesPath(ns) + "/" + name); got.ok()) svc_now = *got;
  } else {
    auto svc = Upsert(&client_, ServicesPath(ns), service, keep_owners, false);
    if (!svc.ok()) return failed(svc.error());
    svc_now = *svc;
    if (hpa != nullptr) {
      auto h = Upsert(&client_, HpasPath(ns), *hpa, keep_owners, true);
      if (!h.ok()) return failed(h.error());
    } else {
      // The older version scaled; this one does not: its HPA would fight the replica count.
      auto r = client_.Delete(HpasPath(ns) + "/" + name);
      if (!r.ok() && r.error().code != codes::kNotFound) return failed(r.error());
    }
  }
  const std::string cluster_ip = Str(svc_now.value("spec", json::object()), "clusterIP");
  auto a = std::make_unique<Attempt>();
  a->spec = spec;
  a->ns = ns;
  a->pod = name;
  a->serving = true;
  a->cluster_ip = cluster_ip == "None" ? "" : cluster_ip;
  a->staging = AttemptStagingUri(opts_.staging_prefix, spec.namespace_, spec.run_id, spec.step,
                                 spec.attempt);
  a->started_ms = NowMs();
  a->status.endpoint = "http://" + name + "." + ns + ".svc:" + std::to_string(ServingPort(spec));
  a->status.desired_replicas = int(deploy["spec"]["replicas"].get<int64_t>());
  {
    std::lock_guard<std::mutex> lock(mu_);
    attempts_[spec.attempt_id] = std::move(a);
  }
  std::string what =
      "deployment, service" + std::string(hpa != nullptr ? " and hpa " : " ") + ns + "/" + name;
  std::string msg = adopted ? what + " already exist: adopted"
                    : previous.empty()
                        ? "created " + what
                        : "updated " + what + " in place (rolling update from " + previous +
                              ", which serves until this version is ready)";
  if (on_event) on_event({spec.attempt_id, spec::EventReason::kSubmitted, msg, "", false});
  cv_.notify_all();
  return Status::Ok();
}

Result<std::string> K8sBackend::RollBackServing(const std::string& ns, const std::string& name,
                                                const std::string& attempt_id) {
  const std::string item = DeploymentsPath(ns) + "/" + name;
  auto cur = client_.Get(item);
  if (!cur.ok()) {
    if (cur.error().code == codes::kNotFound) return std::string();
    return cur.error();
  }
  const std::string holder = AttemptAnnotation(*cur);
  if (holder != attempt_id) {
    return Error(codes::kConflict, "deployment " + ns + "/" + name + " is held by " + holder);
  }
  const std::string previous = Annotation(*cur, kAnnotationPrevious);
  json back = json::parse(Annotation(*cur, kAnnotationRollback), nullptr, false);
  if (previous.empty() || !back.is_object() || !back.value("deployment", json()).is_object()) {
    return std::string();
  }
  const json& d = back["deployment"];
  const json meta = cur->value("metadata", json::object());
  json patch = {{"metadata",
                 {{"labels", MergePatchBetween(meta.value("labels", json::object()), d["labels"])},
                  {"annotations",
                   {{kAnnotationAttempt, previous},
                    {kAnnotationPrevious, nullptr},
                    {kAnnotationRollback, nullptr}}},
                  {"ownerReferences", d["ownerReferences"]},
                  // Only the Deployment as read: a newer version taking it over meanwhile wins.
                  {"resourceVersion", meta.value("resourceVersion", "")}}},
                {"spec", MergePatchBetween(cur->value("spec", json::object()), d["spec"])}};
  auto patched = client_.MergePatch(item, patch);
  if (!patched.ok()) return patched.error();
  const json annotations = {{kAnnotationAttempt, previous}};
  RSL_RETURN_IF_ERROR(Restore(&client_, ServicesPath(ns), name, "v1", "Service",
                              back.value("service", json()), annotations, false));
  RSL_RETURN_IF_ERROR(Restore(&client_, HpasPath(ns), name, "autoscaling/v2",
                              "HorizontalPodAutoscaler", back.value("hpa", json()), annotations,
                              true));
  return previous;
}

bool K8sBackend::DeleteServingObjects(const std::string& ns, const std::string& name,
                                      int64_t grace_ms) {
  DeleteOptions del;
  del.grace_period_seconds = std::max<int64_t>(0, (grace_ms + 999) / 1000);
  del.propagation_policy = "Background";  // its ReplicaSets and Pods follow
  (void)client_.Delete(HpasPath(ns) + "/" + name, del);
  (void)client_.Delete(ServicesPath(ns) + "/" + name, del);
  auto r = client_.Delete(DeploymentsPath(ns) + "/" + name, del);
  return r.ok() || r.error().code == codes::kNotFound;
}

void K8sBackend::ReconcileServing(Attempt* a, const std::map<std::string, json>& deploys,
                                  std::vector<AttemptEvent>* events,
                                  std::vector<std::pair<std::string, json>>* patches) {
  const std::string& id = a->spec.attempt_id;
  const std::string where = "deployment " + a->ns + "/" + a->pod;
  auto finish = [&](ExitKind kind, const std::string& message, const std::string& code = "") {
    AttemptExit e;
    e.attempt_id = id;
    e.kind = kind;
    e.exit_code = kind == ExitKind::kSucceeded ? 0 : -1;
    e.message = message;
    e.code = code;
    FinishLocked(a, e);
  };
  auto d = deploys.find(a->pod);
  if (d == deploys.end()) {
    if (a->stop_requested && (a->seen || a->delete_sent)) {
      finish(a->timed_out ? ExitKind::kTimedOut : ExitKind::kCancelled,
             a->timed_out ? "time limit reached: " + where + " deleted"
                          : "cancelled: " + where + " deleted");
    } else if (a->seen) {
      finish(ExitKind::kNodeLost, where + " was deleted outside RSL");
    } else if (a->adopted && NowMs() - a->synced_ms > opts_.adopt_grace_ms) {
      finish(ExitKind::kNodeLost, where + " not found after a controller restart");
    }
    return;
  }
  const json& deploy = d->second;
  const std::string holder = AttemptAnnotation(deploy);
  const std::string previous = Annotation(deploy, kAnnotationPrevious);
  const int ready = int(IntAt(deploy, "status", "readyReplicas"));
  const int running = int(IntAt(deploy, "status", "replicas"));
  const int desired = int(IntAt(deploy, "spec", "replicas"));
  if (holder != id) {
    if (!a->seen && !a->adopted) return;  // our own update is not in the cache yet
    if (a->stop_requested) {
      finish(
          a->timed_out ? ExitKind::kTimedOut : ExitKind::kCancelled,
          (a->timed_out ? "time limit reached: " : "cancelled: ") + where + " now runs " + holder);
      return;
    }
    if (previous == id) {
      // A newer version rolls out (Kubernetes keeps this version's Pods until its own are
      // ready, maxUnavailable 0): this one serves until then.
      a->seen = true;
      a->rollout_to = holder;
      a->status.replicas = running;
      a->status.ready_replicas = ready;
      a->status.desired_replicas = desired;
      return;
    }
    // The newer version is ready (it dropped the previous annotation), or a still newer one
    // took over from the version that serves: this one is done.
    a->last_events.push_back(
        {id, spec::EventReason::kSuperseded,
         a->ever_ready ? holder + " is ready behind " + a->status.endpoint +
                             ": the rolling update of " + where + " replaced this version's pods"
                       : holder + " took over " + where + " before this version was ready",
         "", false});
    finish(ExitKind::kSucceeded, "superseded by " + holder);
    return;
  }
  a->seen = true;
  if (!a->rollout_to.empty()) {
    // The newer version ended before it was ready (never ready, cancelled): the objects are
    // back on this one.
    events->push_back({id, spec::EventReason::kRolledBack,
                       "the rollout to " + a->rollout_to + " ended before it was ready: " + where +
                           " is back on this version, which kept serving",
                       "", false});
    a->rollout_to.clear();
  }
  if (a->stop_requested) return;  // deleted; its end comes when the cache loses it
  const int64_t min_ready = std::max<int64_t>(1, a->spec.serving->autoscaling.min_replicas);
  if (!a->running_reported) {
    // The attempt runs once the cluster holds its Deployment (its Pods go wherever the
    // scheduler puts them: no one node).
    a->running_reported = true;
    events->push_back({id, spec::EventReason::kRunning,
                       where + ": " + std::to_string(desired) + " replica(s), waiting for " +
                           std::to_string(min_ready) + " ready",
                       "", false});
  }
  // Ready Pods of this version's template: the status must describe the current spec
  // (observedGeneration), and during a rollout the older version's Pods (replicas not yet
  // updated) count as ready at most.
  const int64_t generation = IntAt(deploy, "metadata", "generation");
  const bool observed = IntAt(deploy, "status", "observedGeneration") >= generation;
  const int updated = int(IntAt(deploy, "status", "updatedReplicas"));
  const int ready_new = observed ? std::max(0, ready - std::max(0, running - updated)) : 0;
  std::string endpoint = a->status.endpoint;
  if (!a->cluster_ip.empty()) {
    endpoint += " (ClusterIP " + a->cluster_ip + ":" + std::to_string(ServingPort(a->spec)) + ")";
  }
  if (a->last_desired >= 0 && desired != a->last_desired) {
    bool up = desired > a->last_desired;
    events->push_back({id, up ? spec::EventReason::kScaledUp : spec::EventReason::kScaledDown,
                       "replicas " + std::to_string(a->last_desired) + " -> " +
                           std::to_string(desired) + " (" + where + ")",
                       "", false});
    a->status.last_scale_time_ms = NowMs();
  }
  a->last_desired = desired;
  if (!a->ready_reported && ready_new >= min_ready) {
    a->ready_reported = true;
    a->ever_ready = true;
    events->push_back({id, spec::EventReason::kServingReady,
                       std::to_string(ready_new) + "/" + std::to_string(desired) +
                           " replica(s) ready behind " + endpoint,
                       "", false});
  } else if (a->ready_reported && ready < min_ready) {
    a->ready_reported = false;
    events->push_back({id, spec::EventReason::kServingNotReady,
                       std::to_string(ready) + " of " + std::to_string(min_ready) +
                           " replica(s) ready (" + where + ")",
                       "", true});
  }
  a->status.replicas = running;
  a->status.ready_replicas = ready;
  a->status.desired_replicas = desired;
  if (a->ever_ready && !previous.empty() && NowMs() - a->takeover_ms >= kTakeoverResendMs) {
    // Ready: the older version is superseded (it sees the previous annotation go) and the
    // objects become this run's alone. The Deployment's patch only applies to what was read.
    a->takeover_ms = NowMs();
    const json owners = ControllerOwners(deploy);
    patches->push_back(
        {DeploymentsPath(a->ns) + "/" + a->pod,
         {{"metadata",
           {{"annotations", {{kAnnotationPrevious, nullptr}, {kAnnotationRollback, nullptr}}},
            {"ownerReferences", owners},
            {"resourceVersion", deploy["metadata"].value("resourceVersion", "")}}}}});
    const json own = {{"metadata", {{"ownerReferences", owners}}}};
    patches->push_back({ServicesPath(a->ns) + "/" + a->pod, own});
    if (Scales(*a->spec.serving)) patches->push_back({HpasPath(a->ns) + "/" + a->pod, own});
  }
  if (!a->ever_ready && NowMs() - a->started_ms >= a->spec.serving->ready_timeout_ms) {
    std::string msg =
        std::to_string(ready_new) + " of " + std::to_string(min_ready) +
        " replica(s) ready after " + std::to_string(a->spec.serving->ready_timeout_ms / 1000) +
        "s (readyTimeout); `kubectl -n " + a->ns + " describe deployment " + a->pod + "` says why";
    a->last_events.push_back({id, spec::EventReason::kServingNotReady, msg, "", true});
    a->end_objects = true;  // by the finisher, before the engine hears (and relaunches)
    finish(ExitKind::kFailed, msg, codes::kServingNotReady);
  }
}

std::optional<backend::ServingStatus> K8sBackend::Serving(const std::string& attempt_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = attempts_.find(attempt_id);
  if (it == attempts_.end() || !it->second->serving) return std::nullopt;
  return it->second->status;
}

}  // namespace rsl::k8s
