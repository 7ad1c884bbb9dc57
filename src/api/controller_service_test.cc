// The real Service's paged status and describe (GetWorkloadView, DescribeView) over a real
// store, and the routes' limit / continue / eventLimit, through HTTP.
#include "api/controller_service.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "api/audit.h"
#include "api/auth.h"
#include "api/http_test_util.h"
#include "api/server.h"
#include "base/codes.h"
#include "base/file.h"
#include "base/sqlite.h"
#include "base/test_util.h"
#include "engine/engine.h"
#include "engine/testing.h"

namespace rsl::api {
namespace {

constexpr int kBigSteps = 1200;

class ControllerServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.Sub("state");
    auto opened = store::OpenSqliteStore(dir_);
    ASSERT_TRUE(opened.ok()) << opened.error().ToString();
    store_ = std::move(*opened);
    engine::EngineOptions eo;
    eo.state_dir = dir_;
    engine_ = std::make_unique<engine::Engine>(store_.get(), &backend_, engine::Hooks{}, eo);
    service_ = std::make_unique<ControllerService>(store_.get(), engine_.get(), &backend_,
                                                   &metrics_, dir_);
  }

  // A finished-or-running run of `steps` steps named s0, s1, ... (pipeline order), with
  // `events` events. Step 5 FAILED, 7 RETRYING, every 100th from 900 on RUNNING (a live
  // attempt), the rest below 900 SUCCEEDED, above PENDING.
  std::string AddRun(const std::string& id, int steps, int events) {
    store::Batch b;
    store::WorkloadVersion v;
    v.id = id;
    v.name = "big";
    v.namespace_ = "risk";
    v.spec_json = "{}";
    v.digest = "sha256:00";
    v.created_at = 1000;
    v.created_by = "eddie";
    b.versions.push_back(v);
    store::Run r;
    r.id = store::RunIdFor(id);
    r.workload_id = id;
    r.name = v.name;
    r.namespace_ = v.namespace_;
    r.phase = spec::RunPhase::kRunning;
    r.created_at = 1000;
    r.started_at = 1001;
    b.runs.push_back(r);
    for (int i = 0; i < steps; ++i) {
      store::Step s;
      s.run_id = r.id;
      s.name = "s" + std::to_string(i);
      s.index = i;
      s.phase = i < 900 ? spec::StepPhase::kSucceeded : spec::StepPhase::kPending;
      if (i == 5) s.phase = spec::StepPhase::kFailed;
      if (i == 7) s.phase = spec::StepPhase::kRetrying;
      if (i >= 900 && i % 100 == 0) {
        s.phase = spec::StepPhase::kRunning;
        s.attempts = 1;
        s.attempt_id = r.id + "/" + s.name + "/1";
      }
      if (s.phase != spec::StepPhase::kPending) s.started_at = 2000 + i;
      b.steps.push_back(s);
    }
    for (int i = 0; i < events; ++i) {
      store::Event e;
      e.run_id = r.id;
      e.step = "s0";
      e.reason = "Started";
      e.message = "event " + std::to_string(i);
      e.time = 3000 + i;
      b.events.push_back(e);
    }
    EXPECT_TRUE(store_->Apply(&b).ok());
    return id;
  }

  static std::vector<std::string> Names(const Json& steps) {
    std::vector<std::string> out;
    for (const auto& s : steps) out.push_back(s.value("name", std::string()));
    return out;
  }

  rsl::testing::TempDir tmp_{"controller_service_test"};
  std::string dir_;
  std::unique_ptr<store::Store> store_;
  engine::testing::InProcessBackend backend_;
  std::unique_ptr<engine::Engine> engine_;
  Metrics metrics_;
  std::unique_ptr<ControllerService> service_;
};

TEST_F(ControllerServiceTest, AStatusPageHasTheCountsAndTheStepsThatNeedAttention) {
  std::string id = AddRun("wl-20261203-0000b160", kBigSteps, 10);
  StepsView view;
  view.limit = 500;
  auto w = service_->GetWorkloadView(id, view);
  ASSERT_TRUE(w.ok()) << w.error().ToString();
  const Json& st = (*w)["status"];
  ASSERT_EQ(st["steps"].size(), 500u);
  EXPECT_EQ(st["steps"][0]["name"], "s0");
  EXPECT_EQ(st["steps"][499]["name"], "s499");
  EXPECT_EQ(st["stepsContinue"], "step-499");
  EXPECT_EQ(st["stepCount"], kBigSteps);
  EXPECT_EQ(st["stepsSucceeded"], 898);  // 0..899 but 5 and 7
  EXPECT_EQ(st["stepCounts"], Json({{"SUCCEEDED", 898},
                                    {"FAILED", 1},
                                    {"RETRYING", 1},
                                    {"RUNNING", 3},
                                    {"PENDING", kBigSteps - 903}}));
  // The steps that need attention, in pipeline order, whatever page they are on.
  EXPECT_EQ(Names(st["activeSteps"]),
            (std::vector<std::string>{"s5", "s7", "s900", "s1000", "s1100"}));
  // The run's current step, not the page's: the first live or RETRYING one.
  EXPECT_EQ(st["currentStep"]["name"], "s7");
  EXPECT_EQ(st["currentStep"]["index"], 7);
}

TEST_F(ControllerServiceTest, PagesCoverEveryStepOnceInPipelineOrder) {
  std::string id = AddRun("wl-20261203-0000b161", kBigSteps, 0);
  std::vector<std::string> seen;
  StepsView view;
  view.limit = 500;
  for (int pages = 0; pages < 5; ++pages) {
    auto w = service_->GetWorkloadView(id, view);
    ASSERT_TRUE(w.ok()) << w.error().ToString();
    for (const auto& name : Names((*w)["status"]["steps"])) seen.push_back(name);
    if (!(*w)["status"].contains("stepsContinue")) {
      EXPECT_EQ(pages, 2);
      break;
    }
    view.continue_token = (*w)["status"]["stepsContinue"].get<std::string>();
  }
  ASSERT_EQ(seen.size(), size_t{kBigSteps});
  for (int i = 0; i < kBigSteps; ++i) EXPECT_EQ(seen[size_t(i)], "s" + std::to_string(i));
  // Every step at once: no page, no activeSteps.
  auto all = service_->GetWorkloadView(id, StepsView{});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)["status"]["steps"].size(), size_t{kBigSteps});
  EXPECT_FALSE((*all)["status"].contains("stepsContinue"));
  EXPECT_FALSE((*all)["status"].contains("activeSteps"));
  EXPECT_EQ((*all)["status"]["currentStep"]["name"], "s7");
}

TEST_F(ControllerServiceTest, ASmallRunIsAnsweredAsItAlwaysWas) {
  std::string id = AddRun("wl-20261203-0000b162", 3, 4);
  StepsView view;
  view.limit = 500;
  view.event_limit = 500;
  auto page = service_->GetWorkloadView(id, view);
  auto whole = service_->GetWorkload(id);
  ASSERT_TRUE(page.ok() && whole.ok());
  EXPECT_EQ(*page, *whole);
  EXPECT_FALSE((*page)["status"].contains("activeSteps"));
  auto described = service_->DescribeView(id, view);
  auto described_whole = service_->Describe(id);
  ASSERT_TRUE(described.ok() && described_whole.ok());
  EXPECT_EQ(*described, *described_whole);
  EXPECT_EQ((*described)["events"].size(), 4u);
  EXPECT_EQ((*described)["eventCount"], 4);
}

TEST_F(ControllerServiceTest, DescribeHasTheLastEventsAndTheirCount) {
  std::string id = AddRun("wl-20261203-0000b163", kBigSteps, 800);
  StepsView view;
  view.limit = 100;
  view.event_limit = 300;
  auto d = service_->DescribeView(id, view);
  ASSERT_TRUE(d.ok()) << d.error().ToString();
  ASSERT_EQ((*d)["events"].size(), 300u);
  EXPECT_EQ((*d)["events"][0]["message"], "event 500");
  EXPECT_EQ((*d)["events"][299]["message"], "event 799");
  EXPECT_EQ((*d)["eventCount"], 800);
  EXPECT_EQ((*d)["status"]["steps"].size(), 100u);
  EXPECT_EQ((*d)["status"]["stepsContinue"], "step-99");
  EXPECT_TRUE(d->contains("spec"));
}

TEST_F(ControllerServiceTest, AContinueTokenThisApiDidNotGiveIsRefused) {
  std::string id = AddRun("wl-20261203-0000b164", 10, 0);
  for (const char* token : {"abc", "step-", "step-x1", "12_wl-20261203-0000b164"}) {
    StepsView view;
    view.limit = 5;
    view.continue_token = token;
    auto w = service_->GetWorkloadView(id, view);
    ASSERT_FALSE(w.ok()) << token;
    EXPECT_EQ(w.error().code, codes::kInvalidArgument);
    EXPECT_EQ(w.error().path, "continue");
    EXPECT_EQ(w.error().value, token);
  }
}

TEST_F(ControllerServiceTest, TheRoutesTakeLimitContinueAndEventLimit) {
  std::string id = AddRun("wl-20261203-0000b165", kBigSteps, 700);
  auto tokens = TokenStore::Open(dir_);
  auto audit = AuditLog::Open(dir_);
  ASSERT_TRUE(tokens.ok() && audit.ok());
  auto token = (*tokens)->Create("vera", Role::kViewer, {"risk"});
  ASSERT_TRUE(token.ok());
  ApiServer server(service_.get(), tokens->get(), audit->get(), &metrics_);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  auto get = [&](const std::string& path) {
    return testing::RawRequest(server.port(), "GET", path, *token);
  };
  const std::string base = "/api/v1/workloads/" + id;
  // Without a limit: the default page and the last 500 events.
  std::string answer = get(base);
  ASSERT_EQ(testing::StatusOf(answer), 200) << answer;
  Json w = Json::parse(testing::BodyOf(answer));
  EXPECT_EQ(w["status"]["steps"].size(), size_t(kDefaultStepLimit));
  EXPECT_EQ(w["status"]["stepsContinue"], "step-499");
  answer = get(base + "?limit=600&continue=step-999");
  ASSERT_EQ(testing::StatusOf(answer), 200) << answer;
  w = Json::parse(testing::BodyOf(answer));
  EXPECT_EQ(w["status"]["steps"].size(), 200u);
  EXPECT_EQ(w["status"]["steps"][0]["name"], "s1000");
  EXPECT_FALSE(w["status"].contains("stepsContinue"));
  answer = get(base + "/describe");
  ASSERT_EQ(testing::StatusOf(answer), 200) << answer;
  Json d = Json::parse(testing::BodyOf(answer));
  EXPECT_EQ(d["events"].size(), size_t(kDefaultEventLimit));
  EXPECT_EQ(d["eventCount"], 700);
  d = Json::parse(testing::BodyOf(get(base + "/describe?limit=0&eventLimit=0")));
  EXPECT_EQ(d["status"]["steps"].size(), size_t{kBigSteps});
  EXPECT_EQ(d["events"].size(), 700u);
  // Not a number, or a token this API did not give: 400 with the parameter and the value.
  for (const std::string& bad :
       {base + "?limit=many", base + "/describe?eventLimit=-1", base + "?continue=zzz"}) {
    answer = get(bad);
    EXPECT_EQ(testing::StatusOf(answer), 400) << bad << "\n" << answer;
    EXPECT_NE(answer.find(codes::kInvalidArgument), std::string::npos) << answer;
  }
  server.Stop();
}

// AppendIn writes inside a store batch's transaction (store::Batch::also): the entry is
// durable with the batch's rows, or, when the transaction fails, neither is there.
TEST_F(ControllerServiceTest, AnAuditEntryInAStoreBatchCommitsWithItOrNotAtAll) {
  auto opened = AuditLog::Open(dir_);
  ASSERT_TRUE(opened.ok());
  AuditLog* audit = opened->get();
  store::Store* store = store_.get();
  auto batch = [](const std::string& id) {
    store::Batch b;
    store::WorkloadVersion v;
    v.id = id;
    v.name = "n";
    v.namespace_ = "risk";
    v.spec_json = "{}";
    v.digest = "sha256:00";
    v.created_at = 1;
    b.versions.push_back(v);
    return b;
  };
  auto entry = [](const std::string& id) {
    return AuditEntry{0, 0, "ada", "submit", "workloads", "risk", id, "OK", "n"};
  };
  store::Batch ok = batch("wl-20260101-00000001");
  ok.also.push_back([&](Db* db) { return audit->AppendIn(db, entry("wl-20260101-00000001")); });
  ASSERT_TRUE(store->Apply(&ok).ok());
  store::Batch bad = batch("wl-20260101-00000002");
  bad.also.push_back([&](Db* db) { return audit->AppendIn(db, entry("wl-20260101-00000002")); });
  bad.also.push_back([](Db*) { return Status(Error(codes::kIoError, "disk gone")); });
  Status failed = store->Apply(&bad);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.code(), codes::kIoError);
  auto entries = audit->List({});
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ(entries->front().object_id, "wl-20260101-00000001");
  EXPECT_GT(entries->front().time_ms, 0);
  EXPECT_TRUE(store->GetVersion("wl-20260101-00000001").ok());
  EXPECT_FALSE(store->GetVersion("wl-20260101-00000002").ok());
  EXPECT_EQ(audit->commits(), 0);
  // Another database's connection is refused, not written.
  auto other = Db::Open(tmp_.Sub("other") + ".db");
  ASSERT_TRUE(other.ok());
  Status wrong = audit->AppendIn(other->get(), entry("wl-x"));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.code(), codes::kInternal);
}

// An accepted submission's audit entry is written in the transaction that records the
// submission (Service::AcceptedWrite): no audit transaction of its own, and exactly one entry.
// A refused submission's entry is appended after, in a transaction of its own.
TEST_F(ControllerServiceTest, AnAcceptedSubmissionsAuditEntryCommitsWithIt) {
  ASSERT_TRUE(engine_->Start().ok());
  auto tokens = TokenStore::Open(dir_);
  auto audit = AuditLog::Open(dir_);
  ASSERT_TRUE(tokens.ok() && audit.ok());
  auto token = (*tokens)->Create("eddie", Role::kEditor, {"risk"});
  ASSERT_TRUE(token.ok());
  ApiServer server(service_.get(), tokens->get(), audit->get(), &metrics_);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  const std::string yaml =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: audited, "
      "namespace: risk}\nspec:\n  pipeline:\n    - {name: a, command: [\"true\"]}\n";
  std::string answer =
      testing::RawRequest(server.port(), "POST", "/api/v1/workloads", *token, yaml);
  ASSERT_EQ(testing::StatusOf(answer), 201) << answer;
  std::string id = Json::parse(testing::BodyOf(answer))["metadata"]["id"];
  EXPECT_EQ((*audit)->commits(), 0);  // no transaction of the audit log's own
  AuditQuery q;
  q.object_id = id;
  auto entries = (*audit)->List(q);
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 1u);
  const AuditEntry& e = entries->front();
  EXPECT_EQ(e.subject, "eddie");
  EXPECT_EQ(e.verb, "submit");
  EXPECT_EQ(e.resource, "workloads");
  EXPECT_EQ(e.namespace_, "risk");
  EXPECT_EQ(e.result, "OK");
  EXPECT_EQ(e.message, "audited");
  EXPECT_GT(e.time_ms, 0);
  // Refused (not a workload): appended alone, with the error's code.
  answer = testing::RawRequest(server.port(), "POST", "/api/v1/workloads", *token, "kind: [");
  ASSERT_EQ(testing::StatusOf(answer), 400) << answer;
  EXPECT_EQ((*audit)->commits(), 1);
  entries = (*audit)->List({});
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ(entries->back().object_id, "");
  EXPECT_NE(entries->back().result, "OK");
  server.Stop();
}

// Submit caches the spec it parsed as the new version's snapshot (not parsed back from the
// version's canonical text): whatever is built from a snapshot (the limits of each step in
// the answer and in status, a page's spec in describe, lineage) must be what a service with
// empty caches builds from the store alone. Each example workload, and one written with
// what the canonical form expands (shorthands, defaults, units).
TEST_F(ControllerServiceTest, ASubmissionIsAnsweredAsAReadOfItAnswers) {
  ASSERT_TRUE(engine_->Start().ok());
  const std::string examples = std::string(RSL_SOURCE_DIR) + "/examples";
  std::vector<std::pair<std::string, std::string>> specs;
  for (const char* f : {"hello.yaml", "aiworkload-minimal.yaml", "fraud-detect-workload.yaml",
                        "log-features.yaml", "accuracy-alert.yaml", "recommend-serving.yaml"}) {
    auto text = ReadFile(examples + "/" + f);
    ASSERT_TRUE(text.ok()) << text.error().ToString();
    specs.emplace_back(f, *text);
  }
  specs.emplace_back("shorthands.yaml", R"(apiVersion: aiengine.volc.com/v1
kind: AIWorkload
metadata: {name: shorthands, namespace: risk, labels: {team: a}}
spec:
  resources: {cpu: 1.5, memory: 2Gi}
  imagePullSecrets: [{name: regcred}]
  pipeline:
    atomic: true
    steps:
      - name: a
        command: ["sh", "-c", "echo a > $RSL_OUTPUT/a.txt"]
        retryPolicy: {maxRetries: 2, backoff: 90s}
        timeout: 1m
        resources: {cpu: 500m}
        env: {A: "1"}
      - {name: b, command: ["true"], dependsOn: [a], when: "status.a == 'SUCCEEDED'"}
)");
  const StepsView page{1, "", 0};  // a partial page: describe adds the spec of its steps
  for (const auto& [name, yaml] : specs) {
    Errors errors;
    auto submitted = service_->SubmitTo(yaml, name, examples, "risk", "eddie", &errors);
    ASSERT_TRUE(submitted.ok()) << name << ": " << submitted.error().ToString();
    std::string id = (*submitted)["metadata"].value("id", std::string());
    ControllerService fresh(store_.get(), engine_.get(), &backend_, &metrics_, dir_);
    auto answered_limits = [](const Json& obj) {
      std::vector<std::pair<int64_t, int64_t>> limits;
      for (const auto& s : obj["status"]["steps"]) {
        limits.emplace_back(s["memoryLimitBytes"].get<int64_t>(),
                            s["cpuLimitMillis"].get<int64_t>());
      }
      return limits;
    };
    auto read_back = fresh.GetWorkload(id);
    ASSERT_TRUE(read_back.ok()) << read_back.error().ToString();
    EXPECT_EQ(answered_limits(*submitted), answered_limits(*read_back)) << name;
    // The rest once the run has ended, so that both services read the same records.
    ASSERT_TRUE(engine_->Wait(id, 60000).ok()) << name;
    for (ControllerService* svc : {service_.get(), &fresh}) {
      auto got = svc->GetWorkload(id);
      ASSERT_TRUE(got.ok()) << got.error().ToString();
      EXPECT_EQ(answered_limits(*got), answered_limits(*read_back)) << name;
    }
    auto described = service_->DescribeView(id, page);
    auto described_fresh = fresh.DescribeView(id, page);
    ASSERT_TRUE(described.ok() && described_fresh.ok()) << name;
    EXPECT_EQ(described->dump(1), described_fresh->dump(1)) << name;
    auto lineage = service_->Lineage(id, "");
    auto lineage_fresh = fresh.Lineage(id, "");
    ASSERT_TRUE(lineage.ok() && lineage_fresh.ok()) << name;
    EXPECT_EQ(lineage->dump(1), lineage_fresh->dump(1)) << name;
  }
  engine_->Stop(/*stop_steps=*/true);
}

// A submission's namespace is decided once, inside the one parse of its YAML: from
// metadata.namespace as written, or "" when the text is not readable YAML. A refusal is the
// only error, and nothing is stored.
TEST_F(ControllerServiceTest, TheNamespaceIsDecidedOnceAndARefusalStandsAlone) {
  ASSERT_TRUE(engine_->Start().ok());
  std::vector<std::string> asked;
  auto refuse_ads = [&](const std::string& yaml_ns) -> Result<std::string> {
    asked.push_back(yaml_ns);
    if (yaml_ns == "ads") return Error(codes::kForbidden, "not ads");
    return std::string("risk");
  };
  const std::string head = "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\n";
  const std::string body = "spec:\n  pipeline:\n    - {name: a, command: [\"true\"]}\n";
  Errors errors;
  auto ok = service_->Submit(head + "metadata: {name: w}\n" + body, "w.yaml", "", refuse_ads,
                             "eddie", &errors, {});
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_EQ((*ok)["metadata"]["namespace"], "risk");
  auto refused = service_->Submit(head + "metadata: {name: w, namespace: ads, nmae: x}\n" + body,
                                  "w.yaml", "", refuse_ads, "eddie", &errors, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, codes::kForbidden);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message, "not ads");
  auto unreadable = service_->Submit("metadata: [", "w.yaml", "", refuse_ads, "eddie", &errors, {});
  ASSERT_FALSE(unreadable.ok());
  EXPECT_EQ(unreadable.error().code, codes::kSpecParseError);
  EXPECT_EQ(asked, (std::vector<std::string>{"", "ads", ""}));
  for (const char* ns : {"risk", "ads"}) {
    auto stored = store_->ListVersions(ns, "w");
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(stored->size(), ns == std::string("risk") ? 1u : 0u) << ns;
  }
  engine_->Stop(/*stop_steps=*/true);
}

}  // namespace
}  // namespace rsl::api
