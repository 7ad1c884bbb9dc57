// The handlers called directly, one resource at a time, with the fake Service: no router, no
// sockets. The caller is whoever the test says it is (authentication is the router's).
#include "api/routes.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "api/fake_service_test_util.h"
#include "base/codes.h"

namespace rsl::api::routes {
namespace {

const Principal kViewer{"vera", Role::kViewer, {"risk"}, ""};
const Principal kEditor{"eddie", Role::kEditor, {"risk"}, ""};
const Principal kAdmin{"ada", Role::kAdmin, {"*"}, ""};

class RoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "rsl-routes-test-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    audit_ = std::move(AuditLog::Open(dir_).value());
    DescribeControllerMetrics(&metrics_);
    services_ = Services{&service_, nullptr, audit_.get(), &metrics_, [] {
                           return HttpServerStats{3, 1, 0};
                         }};
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Calls `handler` as `who` with the path parameters, query and body given.
  Result<Reply> Call(Result<Reply> (*handler)(const Services&, RequestContext&),
                     const Principal& who, std::map<std::string, std::string> path = {},
                     std::multimap<std::string, std::string> query = {},
                     const std::string& body = "") {
    req_ = HttpRequest();
    req_.params = std::move(query);
    req_.body = body;
    res_ = HttpResponse();
    RequestContext c(req_, res_);
    c.who = who;
    c.path_params = std::move(path);
    auto r = handler(services_, c);
    errors_ = c.errors;
    return r;
  }
  std::vector<AuditEntry> Audit() { return audit_->List({}).value(); }

  std::string dir_;
  testing::FakeService service_;
  std::unique_ptr<AuditLog> audit_;
  Metrics metrics_;
  Services services_;
  HttpRequest req_;
  HttpResponse res_;
  Errors errors_;
};

// --- workloads ------------------------------------------------------------------------------

TEST_F(RoutesTest, GetWorkloadHidesOtherNamespacesAsNotFound) {
  auto mine = Call(GetWorkload, kViewer, {{"id", "wl-20260101-0000000a"}});
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(mine->status, 200);
  EXPECT_EQ(mine->body["metadata"]["namespace"], "risk");
  auto other = Call(GetWorkload, kViewer, {{"id", "wl-20260101-0000000b"}});
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, codes::kNotFound);
  EXPECT_EQ(other.error().message, "workload \"wl-20260101-0000000b\" not found");
  auto malformed = Call(GetWorkload, kAdmin, {{"id", "not-an-id"}});
  EXPECT_EQ(malformed.error().code, codes::kNotFound);
}

TEST_F(RoutesTest, SubmitTakesTheNamespaceFromThePathAndAudits) {
  auto ok = Call(SubmitWorkloadInNamespace, kEditor, {{"ns", "risk"}}, {}, "metadata: {name: w}");
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_EQ(ok->status, 201);
  EXPECT_EQ(service_.last_subject, "eddie");
  auto mismatch = Call(SubmitWorkloadInNamespace, kEditor, {{"ns", "risk"}}, {},
                       "metadata:\n  name: w\n  namespace: ads\n");
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.error().path, "metadata.namespace");
  auto invalid = Call(SubmitWorkload, kEditor, {}, {}, "bad");
  ASSERT_FALSE(invalid.ok());
  ASSERT_EQ(errors_.size(), 2u);  // every validation error reaches the router
  EXPECT_EQ(errors_[1].message, "second");
  auto entries = Audit();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].object_id, "wl-20260101-0000000c");
  EXPECT_EQ(entries[0].result, "OK");
  EXPECT_EQ(entries[1].result, "SPEC_INVALID");
}

TEST_F(RoutesTest, ListWorkloadsForbidsNamespacesOutsideTheToken) {
  auto listed = Call(ListWorkloads, kViewer);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->body["items"][0]["metadata"]["namespace"], "risk");  // the default
  auto other = Call(ListWorkloadsInNamespace, kViewer, {{"ns", "ads"}});
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, codes::kForbidden);
  EXPECT_EQ(other.error().message,
            "subject \"vera\" (role viewer) cannot list workloads in namespace \"ads\"");
  auto all = Call(ListWorkloads, kAdmin, {}, {{"allNamespaces", "true"}});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->body["items"].size(), 0u);  // every namespace: the service gets none named
}

TEST_F(RoutesTest, CancelOutsideTheNamespacesIsNotFoundAndAuditedUnderTheOwner) {
  auto r = Call(CancelWorkload, kEditor, {{"id", "wl-20260101-0000000b"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, codes::kNotFound);
  auto viewer = Call(CancelWorkload, kViewer, {{"id", "wl-20260101-0000000a"}});
  EXPECT_EQ(viewer.error().code, codes::kForbidden);
  auto rollback = Call(RollbackWorkload, kEditor, {{"id", "wl-20260101-0000000a"}});
  ASSERT_TRUE(rollback.ok());
  EXPECT_EQ(rollback->status, 201);
  auto entries = Audit();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].namespace_, "ads");
  EXPECT_EQ(entries[0].message, "outside the caller's namespaces");
  EXPECT_EQ(entries[1].result, "FORBIDDEN");
  EXPECT_EQ(entries[2].verb, "rollback");
  EXPECT_EQ(entries[2].object_id, "wl-20260101-0000000d");
  EXPECT_EQ(entries[2].message, "rolled back from wl-20260101-0000000a");
}

TEST_F(RoutesTest, LogsAreAStreamOnTheResponse) {
  auto unknown =
      Call(WorkloadLogs, kViewer, {{"id", "wl-20260101-0000000a"}}, {{"step", "trainn"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().hint, "did you mean 'train'?");
  auto r = Call(WorkloadLogs, kViewer, {{"id", "wl-20260101-0000000a"}}, {{"step", "train"}});
  ASSERT_TRUE(r.ok());
  ASSERT_NE(res_.stream, nullptr);
  EXPECT_EQ(res_.content_type, "text/plain; charset=utf-8");
  std::string out;
  StreamSource::State state = StreamSource::State::kMore;
  for (int i = 0; i < 10 && state != StreamSource::State::kDone; ++i) {
    state = res_.stream->Next(1 << 10, &out);
  }
  EXPECT_EQ(state, StreamSource::State::kDone);
  EXPECT_EQ(out, "line 1\nline 2\nline 3\n");
}

// --- cluster --------------------------------------------------------------------------------

TEST_F(RoutesTest, MetricsTextSetsTheScrapeTimeGauges) {
  auto r = Call(MetricsText, kAdmin);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->content_type, "text/plain; version=0.0.4");
  EXPECT_NE(r->text.find("rsl_workloads{phase=\"RUNNING\"} 1"), std::string::npos) << r->text;
  EXPECT_NE(r->text.find("rsl_api_open_connections 3"), std::string::npos) << r->text;
  EXPECT_NE(r->text.find("rsl_api_open_streams 1"), std::string::npos) << r->text;
  auto health = Call(Healthz, Principal{});
  EXPECT_EQ(health->text, "ok\n");
  EXPECT_EQ(Call(ClusterStatus, kAdmin)->body["kind"], "ClusterStatus");
}

// --- configuration --------------------------------------------------------------------------

TEST_F(RoutesTest, SecretsAnswerKeysOnlyAndViewersCannotCreate) {
  auto r = Call(CreateSecret, kEditor, {{"ns", "risk"}}, {},
                R"({"name": "db", "data": {"PASSWORD": "hunter2-value", "PIN": "ab"}})");
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->body["keys"], Json::array({"PASSWORD", "PIN"}));
  EXPECT_EQ(r->body["warnings"], Json::array({"the value of PIN is short"}));
  EXPECT_EQ(r->body.dump().find("hunter2"), std::string::npos);
  auto denied =
      Call(CreateConfigMap, kViewer, {{"ns", "risk"}}, {}, R"({"name": "c", "data": {}})");
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().hint, "viewers read only; ask for an editor token");
  auto entries = Audit();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].message, "keys: PASSWORD,PIN");
  EXPECT_EQ(entries[1].resource, "configmaps");
  EXPECT_EQ(entries[1].result, "FORBIDDEN");
  auto who = Call(WhoAmI, kViewer);
  EXPECT_EQ(who->body["defaultNamespace"], "risk");
}

// --- the audit log --------------------------------------------------------------------------

TEST_F(RoutesTest, AuditListIsScopedToTheCallersNamespaces) {
  RecordAudit(services_, kEditor, "submit", "workloads", "risk", "wl-1", Status::Ok(), "");
  RecordAudit(services_, kAdmin, "submit", "workloads", "ads", "wl-2", Status::Ok(), "");
  auto mine = Call(ListAudit, kViewer);
  ASSERT_TRUE(mine.ok());
  ASSERT_EQ(mine->body["items"].size(), 1u);
  EXPECT_EQ(mine->body["items"][0]["objectId"], "wl-1");
  EXPECT_EQ(Call(ListAudit, kAdmin)->body["items"].size(), 2u);
  EXPECT_EQ(Call(ListAudit, kViewer, {}, {{"namespace", "ads"}}).error().code, codes::kForbidden);
  auto bad = Call(ListAudit, kAdmin, {}, {{"limit", "-1"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "invalid limit \"-1\"");
}

}  // namespace
}  // namespace rsl::api::routes
