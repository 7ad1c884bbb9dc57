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
json ServingSelector(const LaunchSpec& s) {
  return ::rsl::k8s::ServingSelector(s.workload_name, s.namespace_, s.step);
}

int64_t IntAt(const json& obj, const char* section, const char* key) {
  auto sec = obj.find(section);
  if (sec == obj.end() || !sec->is_object()) return 0;
  auto it = sec->find(key);
  return it != sec->end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

}  // namespace

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
  const std::string name = ServingObjectName(spec.workload_name, spec.step);
  json labels = AttemptLabels(spec);
  json meta = {{"name", name},
               {"namespace", ns},
               {"labels", labels},
               {"annotations", {{kAnnotationAttempt, spec.attempt_id}}},
               {"ownerReferences", (*pod)["metadata"]["ownerReferences"]}};
  const json selector = ServingSelector(spec);
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
  const json& deploy = (*objects)[0];
  const std::string name = deploy["metadata"]["name"];
  RSL_RETURN_IF_ERROR(CreateAttemptSecret(
      spec, ns, AttemptPodName(spec.workload_name, spec.run_id, spec.step, spec.attempt),
      deploy["metadata"]["ownerReferences"]));
  // Create each object; one already there is this attempt's (a retried create, a relaunch
  // after a restart: left as it is) or an older version's (updated in place: a rollout).
  std::string cluster_ip;
  std::string replaced;  // the attempt whose objects this one took over
  bool adopted = false;
  auto apply = [&](const std::string& path, const json& obj) -> Status {
    auto made = client_.Create(path, obj);
    json now;
    if (made.ok()) {
      now = *made;
    } else if (made.error().code == codes::kConflict) {
      auto got = client_.Get(path + "/" + name);
      if (!got.ok()) return got.error();
      now = *got;
      const std::string holder = AttemptAnnotation(now);
      if (holder == spec.attempt_id) {
        adopted = true;
      } else {
        if (replaced.empty()) replaced = holder;
        // A merge patch replaces the lists (ownerReferences, containers) whole.
        json patch = {{"metadata",
                       {{"labels", obj["metadata"]["labels"]},
                        {"annotations", obj["metadata"]["annotations"]},
                        {"ownerReferences", obj["metadata"]["ownerReferences"]}}},
                      {"spec", obj["spec"]}};
        auto patched = client_.MergePatch(path + "/" + name, patch);
        if (!patched.ok()) return patched.error();
        now = *patched;
      }
    } else {
      return made.error();
    }
    if (obj["kind"] == "Service") cluster_ip = Str(now.value("spec", json::object()), "clusterIP");
    return Status::Ok();
  };
  RSL_RETURN_IF_ERROR(apply(DeploymentsPath(ns), deploy));
  RSL_RETURN_IF_ERROR(apply(ServicesPath(ns), (*objects)[1]));
  if (objects->size() > 2) {
    RSL_RETURN_IF_ERROR(apply(HpasPath(ns), (*objects)[2]));
  } else {
    // The older version scaled; this one does not: its HPA would fight the replica count.
    auto r = client_.Delete(HpasPath(ns) + "/" + name);
    if (!r.ok() && r.error().code != codes::kNotFound) return r.error();
  }
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
  std::string what = "deployment, service" + std::string(objects->size() > 2 ? " and hpa " : " ") +
                     ns + "/" + name;
  std::string msg = adopted ? what + " already exist: adopted"
                    : replaced.empty()
                        ? "created " + what
                        : "updated " + what + " in place (rolling update from " + replaced + ")";
  if (on_event) on_event({spec.attempt_id, spec::EventReason::kSubmitted, msg, "", false});
  cv_.notify_all();
  return Status::Ok();
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
                                  std::vector<AttemptEvent>* events) {
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
  if (holder != id) {
    if (!a->seen && !a->adopted) return;  // our own update is not in the cache yet
    // A newer version took the objects over (updated them in place): this one is done.
    a->last_events.push_back({id, spec::EventReason::kSuperseded,
                              holder + " now runs " + where + " (rolling update in place)", "",
                              false});
    finish(ExitKind::kSucceeded, "superseded by " + holder);
    return;
  }
  a->seen = true;
  if (a->stop_requested) return;  // deleted; its end comes when the cache loses it
  const int64_t min_ready = std::max<int64_t>(1, a->spec.serving->autoscaling.min_replicas);
  const int desired = int(IntAt(deploy, "spec", "replicas"));
  if (!a->running_reported) {
    // The attempt runs once the cluster holds its Deployment (its Pods go wherever the
    // scheduler puts them: no one node).
    a->running_reported = true;
    events->push_back({id, spec::EventReason::kRunning,
                       where + ": " + std::to_string(desired) + " replica(s), waiting for " +
                           std::to_string(min_ready) + " ready",
                       "", false});
  }
  const int ready = int(IntAt(deploy, "status", "readyReplicas"));
  const int running = int(IntAt(deploy, "status", "replicas"));
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
  if (!a->ready_reported && ready >= min_ready) {
    a->ready_reported = true;
    a->ever_ready = true;
    events->push_back({id, spec::EventReason::kServingReady,
                       std::to_string(ready) + "/" + std::to_string(desired) +
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
  if (!a->ever_ready && NowMs() - a->started_ms >= a->spec.serving->ready_timeout_ms) {
    std::string msg =
        std::to_string(ready) + " of " + std::to_string(min_ready) + " replica(s) ready after " +
        std::to_string(a->spec.serving->ready_timeout_ms / 1000) +
        "s (readyTimeout); `kubectl -n " + a->ns + " describe deployment " + a->pod + "` says why";
    a->last_events.push_back({id, spec::EventReason::kServingNotReady, msg, "", true});
    a->delete_objects = true;  // by the finisher, before the engine hears (and relaunches)
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
