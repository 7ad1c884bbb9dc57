// ControllerService: the cluster's objects (nodes, cluster status) and what is kept per
// namespace or state directory beside workloads (configmaps, secrets, datasources,
// environments). Workloads, their runs and metrics are in controller_service.cc.
#include <algorithm>
#include <map>

#include "api/controller_service.h"
#include "api/objects.h"
#include "api/server.h"
#include "base/codes.h"
#include "base/env.h"
#include "data/catalog.h"
#include "model/env_registry.h"
#include "spec/names.h"

namespace rsl::api {

namespace {

// Every key of a configmap or secret becomes an environment variable of the steps that use
// it: refuse what cannot be one, or what RSL sets itself (spec::CheckEnvFromKey).
Status CheckEnvFromKeys(const std::map<std::string, std::string>& data, bool secret) {
  for (const auto& [key, value] : data) {
    std::string hint;
    std::string why = spec::CheckEnvFromKey(key, secret, &hint);
    if (!why.empty()) {
      return Error(codes::kInvalidArgument, why).Path("data." + key).Value(key).Hint(hint);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Json> ControllerService::ListNodes(const std::string& capability) {
  auto nodes = backend_->ListNodes();
  if (!nodes.ok()) return nodes.error();
  // What runs where: the live attempts of the unfinished runs, by the node they run on.
  std::map<std::string, Json> running;
  store::RunFilter unfinished;
  unfinished.unfinished_only = true;
  auto runs = store_->ListRuns(unfinished);
  if (!runs.ok()) return runs.error();
  for (const auto& r : *runs) {
    store::StepPageQuery live;  // only the live attempts, not every step of a big run
    live.run_id = r.id;
    live.live_only = true;
    auto steps = store_->ListStepsPage(live);
    if (!steps.ok()) return steps.error();
    for (const auto& s : *steps) {
      if (!store::StepAttemptLive(s) || s.node.empty()) continue;
      Json& list = running[s.node];
      if (list.is_null()) list = Json::array();
      list.push_back({{"workloadId", r.workload_id},
                      {"workload", r.name},
                      {"namespace", r.namespace_},
                      {"step", s.name},
                      {"attempt", s.attempts},
                      {"phase", spec::Name(s.phase)},
                      {"startedAtMs", s.started_at}});
    }
  }
  Json items = Json::array();
  for (const auto& n : *nodes) {
    std::vector<std::string> caps = n.capabilities;
    Json gpus = Json::array();
    for (const auto& g : n.gpus) {
      caps.insert(caps.end(), g.capabilities.begin(), g.capabilities.end());
      gpus.push_back({{"model", g.model},
                      {"memoryBytes", g.memory_bytes},
                      {"capabilities", g.capabilities},
                      {"probed", g.probed}});
    }
    std::sort(caps.begin(), caps.end());
    caps.erase(std::unique(caps.begin(), caps.end()), caps.end());
    if (!capability.empty() && std::find(caps.begin(), caps.end(), capability) == caps.end()) {
      continue;
    }
    items.push_back({{"apiVersion", kApiVersion},
                     {"kind", "Node"},
                     {"metadata", {{"name", n.name}, {"labels", n.labels}}},
                     {"status",
                      {{"state", spec::Name(n.state)},
                       {"cpuMillis", n.cpu_millis},
                       {"memoryBytes", n.memory_bytes},
                       {"usedCpuMillis", n.used_cpu_millis},
                       {"usedMemoryBytes", n.used_memory_bytes},
                       {"usedGpus", n.used_gpus},
                       {"gpus", gpus},
                       {"capabilities", caps},
                       {"running", running.count(n.name) ? running[n.name] : Json::array()}}}});
  }
  return Json{{"apiVersion", kApiVersion}, {"kind", "NodeList"}, {"items", items}};
}

Result<Json> ControllerService::ClusterStatus() {
  auto nodes = backend_->ListNodes();
  if (!nodes.ok()) return nodes.error();
  int gpu_total = 0, gpu_ready = 0, cpu_total = 0, cpu_ready = 0;
  std::map<std::string, int> models;
  for (const auto& n : *nodes) {
    bool ready = n.state == spec::NodeState::kReady;
    if (!n.gpus.empty()) {
      ++gpu_total;
      gpu_ready += ready;
      models[n.gpus.front().model] += 1;
    } else {
      ++cpu_total;
      cpu_ready += ready;
    }
  }
  Json proxies = {{"total", 0}, {"registered", Json::array()}};
  auto catalog = data::Catalog::Open(state_dir_);
  if (catalog.ok()) {
    auto list = (*catalog)->List();
    if (list.ok()) {
      for (const auto& d : *list) proxies["registered"].push_back(d.name);
      proxies["total"] = list->size();
    }
  }
  std::map<std::string, int64_t> phases;
  auto counts = store_->CountPhases();  // counted by the store, not read
  if (counts.ok()) phases = counts->runs;
  return Json{
      {"apiVersion", kApiVersion},
      {"kind", "ClusterStatus"},
      {"controller",
       {{"state", "Running"}, {"version", kControllerVersion}, {"backend", backend_->name()}}},
      {"dataSources", proxies},
      {"gpuNodes", {{"total", gpu_total}, {"ready", gpu_ready}, {"models", models}}},
      {"cpuNodes", {{"total", cpu_total}, {"ready", cpu_ready}}},
      {"workloads", phases}};
}

namespace {
// A configmap or secret as the store keeps it, stamped now.
store::ConfigMap NewConfigMap(const std::string& ns, const std::string& name,
                              const std::map<std::string, std::string>& data, bool secret) {
  store::ConfigMap cm;
  cm.namespace_ = ns;
  cm.name = name;
  cm.secret = secret;
  cm.data = data;
  cm.updated_at = Env::Default()->NowMs();
  return cm;
}
}  // namespace

Status ControllerService::PutConfigMap(const std::string& ns, const std::string& name,
                                       const std::map<std::string, std::string>& data) {
  RSL_RETURN_IF_ERROR(CheckEnvFromKeys(data, /*secret=*/false));
  return store_->PutConfigMap(NewConfigMap(ns, name, data, /*secret=*/false));
}

Status ControllerService::PutSecret(const std::string& ns, const std::string& name,
                                    const std::map<std::string, std::string>& data,
                                    std::vector<std::string>* warnings) {
  RSL_RETURN_IF_ERROR(CheckEnvFromKeys(data, /*secret=*/true));
  *warnings = UnmaskedSecretWarnings(data);
  return store_->PutConfigMap(NewConfigMap(ns, name, data, /*secret=*/true));
}

Result<Json> ControllerService::ListConfigMaps(const std::string& ns) {
  auto list = store_->ListConfigMaps(ns, false);
  if (!list.ok()) return list.error();
  Json items = Json::array();
  for (const auto& cm : *list) {
    items.push_back(
        {{"apiVersion", kApiVersion},
         {"kind", "ConfigMap"},
         {"metadata",
          {{"name", cm.name}, {"namespace", cm.namespace_}, {"updatedAtMs", cm.updated_at}}},
         {"data", cm.data}});
  }
  return Json{{"apiVersion", kApiVersion}, {"kind", "ConfigMapList"}, {"items", items}};
}

Result<Json> ControllerService::ListSecrets(const std::string& ns) {
  auto list = store_->ListConfigMaps(ns, true);
  if (!list.ok()) return list.error();
  Json items = Json::array();
  for (const auto& cm : *list) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : cm.data) keys.push_back(k);
    items.push_back(
        {{"apiVersion", kApiVersion},
         {"kind", "Secret"},
         {"metadata",
          {{"name", cm.name}, {"namespace", cm.namespace_}, {"updatedAtMs", cm.updated_at}}},
         {"keys", keys}});
  }
  return Json{{"apiVersion", kApiVersion}, {"kind", "SecretList"}, {"items", items}};
}

namespace {
// What a registry kept in the state directory (datasources, environments) lists, once it opened.
template <class Registry>
auto ListOpened(Result<std::unique_ptr<Registry>> registry) -> decltype(registry.value()->List()) {
  if (!registry.ok()) return registry.error();
  return registry.value()->List();
}
}  // namespace

Result<Json> ControllerService::ListDatasources() {
  Json items = Json::array();
  auto list = ListOpened(data::Catalog::Open(state_dir_));
  if (!list.ok()) return list.error();
  for (const auto& d : *list) {
    items.push_back({{"apiVersion", kApiVersion},
                     {"kind", "Datasource"},
                     {"metadata", {{"name", d.name}}},
                     {"spec", d.RedactedJson()}});
  }
  return Json{{"apiVersion", kApiVersion}, {"kind", "DatasourceList"}, {"items", items}};
}

Result<Json> ControllerService::ListEnvironments() {
  Json items = Json::array();
  auto list = ListOpened(model::EnvRegistry::Open(state_dir_));
  if (!list.ok()) return list.error();
  for (const auto& e : *list) {
    items.push_back(
        {{"apiVersion", kApiVersion},
         {"kind", "Environment"},
         {"metadata", {{"name", e.image}, {"registeredAtMs", e.registered_at_ms}}},
         {"spec",
          {{"kind", e.kind}, {"python", e.python}, {"root", e.root}, {"entrypoint", e.entrypoint}}},
         {"status",
          {{"pythonVersion", e.inspection.python_version},
           {"packages", e.inspection.packages.size()},
           {"digest", e.inspection.digest}}}});
  }
  return Json{{"apiVersion", kApiVersion}, {"kind", "EnvironmentList"}, {"items", items}};
}

}  // namespace rsl::api
