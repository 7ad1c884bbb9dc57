// Test-only: a Service with two fixed workloads and logs that grow as they are read, for the
// server, router and handler tests. Header-only, as http_test_util.h.
#pragma once

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "api/service.h"
#include "base/codes.h"

namespace rsl::api::testing {

// A step log that grows by one line per Next() call until it has 3 lines; step "forever"
// never ends.
class GrowingLog : public StepLog {
 public:
  GrowingLog(std::string step, std::atomic<int>* calls) : step_(std::move(step)), calls_(calls) {}
  const std::string& step() const override { return step_; }
  Result<LogChunk> Next(int64_t) override {
    int n = ++*calls_;
    std::string all;
    for (int i = 1; i <= std::min(n, 3); ++i) all += "line " + std::to_string(i) + "\n";
    LogChunk c;
    if (offset_ < static_cast<int64_t>(all.size()))
      c.data = all.substr(static_cast<size_t>(offset_));
    offset_ += static_cast<int64_t>(c.data.size());
    c.next_offset = offset_;
    c.finished = n >= 3 && offset_ == static_cast<int64_t>(all.size()) && step_ != "forever";
    return c;
  }

 private:
  std::string step_;
  std::atomic<int>* calls_;
  int64_t offset_ = 0;
};

// Workloads "wl-20260101-0000000a" (namespace risk) and "...0b" (namespace ads); one step
// "train" whose log grows by one line per read until it has 3 lines.
class FakeService : public Service {
 public:
  Result<Json> Submit(const std::string& yaml, const std::string& source,
                      const std::string& /*base_dir*/, const NamespaceDecider& decide,
                      const std::string& subject, Errors* errors,
                      const AcceptedWrite& /*also*/) override {
    std::string yaml_ns;  // metadata.namespace, as the real service's parse reads it
    try {
      const YAML::Node root = YAML::Load(yaml);
      if (root.IsMap() && root["metadata"].IsMap() && root["metadata"]["namespace"].IsScalar()) {
        yaml_ns = root["metadata"]["namespace"].Scalar();
      }
    } catch (const YAML::Exception&) {
    }
    auto ns = decide(yaml_ns);
    if (!ns.ok()) {
      *errors = {ns.error()};
      return ns.error();
    }
    if (yaml.find("bad") != std::string::npos) {
      errors->push_back(Error(codes::kSpecInvalid, "unknown field 'nmae'")
                            .Path("metadata.nmae")
                            .At({source, 3, 3})
                            .Hint("did you mean 'name'?"));
      errors->push_back(Error(codes::kSpecInvalid, "second").Path("spec"));
      return errors->front();
    }
    last_subject = subject;
    return Obj("wl-20260101-0000000c", *ns);
  }
  Result<Json> GetWorkload(const std::string& id) override {
    if (id == "wl-20260101-0000000a") return Obj(id, "risk");
    if (id == "wl-20260101-0000000b") return Obj(id, "ads");
    return Error(codes::kNotFound, "workload " + id + " not found");
  }
  Result<Json> ListWorkloads(const std::vector<std::string>& nss, const std::string&) override {
    Json items = Json::array();
    for (const auto& ns : nss) items.push_back(Obj("x", ns));
    return Json{{"items", items}};
  }
  Result<Json> Describe(const std::string& id) override { return GetWorkload(id); }
  Result<Json> Events(const std::string&) override { return Json{{"items", Json::array()}}; }
  Result<std::vector<std::unique_ptr<StepLog>>> OpenLogs(const std::string&,
                                                         const std::vector<std::string>& steps,
                                                         std::optional<int>) override {
    std::vector<std::unique_ptr<StepLog>> logs;
    for (const auto& name : steps) logs.push_back(std::make_unique<GrowingLog>(name, &log_calls));
    return logs;
  }
  Result<Json> Lineage(const std::string&, const std::string&) override { return Json::object(); }
  Result<Json> Cancel(const std::string& id, const std::string&) override {
    return GetWorkload(id);
  }
  Result<Json> Rollback(const std::string& id, const std::string&) override {
    return Obj("wl-20260101-0000000d", "risk");
  }
  Result<Json> ListNodes(const std::string&) override { return Json{{"items", Json::array()}}; }
  Result<Json> ClusterStatus() override { return Json{{"kind", "ClusterStatus"}}; }
  Status PutConfigMap(const std::string&, const std::string&,
                      const std::map<std::string, std::string>&) override {
    return Status::Ok();
  }
  Result<Json> ListConfigMaps(const std::string&) override { return Json::object(); }
  Status PutSecret(const std::string&, const std::string&,
                   const std::map<std::string, std::string>& data,
                   std::vector<std::string>* warnings) override {
    secrets = data;
    if (data.count("PIN")) warnings->push_back("the value of PIN is short");
    return Status::Ok();
  }
  Result<Json> ListSecrets(const std::string&) override { return Json::object(); }
  Result<Json> ListDatasources() override { return Json{{"items", Json::array()}}; }
  Result<Json> ListEnvironments() override { return Json{{"items", Json::array()}}; }
  void CollectMetrics(Metrics* m) override { m->Set("rsl_workloads", {{"phase", "RUNNING"}}, 1); }

  static Json Obj(const std::string& id, const std::string& ns) {
    return {{"apiVersion", kApiVersion},
            {"kind", "AIWorkload"},
            {"metadata", {{"id", id}, {"name", "w"}, {"namespace", ns}}},
            {"status",
             {{"phase", "PENDING"}, {"steps", {{{"name", "train"}}, {{"name", "forever"}}}}}}};
  }

  std::atomic<int> log_calls{0};
  std::string last_subject;
  std::map<std::string, std::string> secrets;
};

}  // namespace rsl::api::testing
