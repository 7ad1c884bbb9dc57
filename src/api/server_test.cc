// The HTTP layer against a fake Service: authentication, authorisation, errors, audit,
// metrics and log streaming, through the real client over loopback.
#include "api/server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "api/client.h"
#include "api/fake_service_test_util.h"
#include "api/http_test_util.h"
#include "api/ui_assets.h"
#include "base/codes.h"

namespace rsl::api {
namespace {

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        (std::filesystem::temp_directory_path() / ("rsl-server-test-" + std::to_string(::getpid())))
            .string();
    std::filesystem::remove_all(dir_);
    tokens_ = std::move(TokenStore::Open(dir_).value());
    audit_ = std::move(AuditLog::Open(dir_).value());
    DescribeControllerMetrics(&metrics_);
    server_ = std::make_unique<ApiServer>(&service_, tokens_.get(), audit_.get(), &metrics_);
    ASSERT_TRUE(server_->Start("127.0.0.1", 0).ok());
    viewer_ = *tokens_->Create("vera", Role::kViewer, {"risk"});
    editor_ = *tokens_->Create("eddie", Role::kEditor, {"risk"});
    admin_ = *tokens_->Create("ada", Role::kAdmin, {"*"});
  }
  void TearDown() override {
    server_->Stop();
    std::filesystem::remove_all(dir_);
  }
  Client As(const std::string& token) {
    ClientConfig c;
    c.server = "http://127.0.0.1:" + std::to_string(server_->port());
    c.token = token;
    return Client(c);
  }

  std::string dir_;
  testing::FakeService service_;
  std::unique_ptr<TokenStore> tokens_;
  std::unique_ptr<AuditLog> audit_;
  Metrics metrics_;
  std::unique_ptr<ApiServer> server_;
  std::string viewer_, editor_, admin_;
};

TEST_F(ServerTest, NoTokenIs401AndBadTokenToo) {
  auto r = As("").Get("/api/v1/workloads");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "UNAUTHENTICATED");
  EXPECT_EQ(r.error().message, "no bearer token");
  auto bad = As(editor_ + "0").Get("/api/v1/workloads/wl-20260101-0000000a");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, "UNAUTHENTICATED");
  // health needs no token
  auto h = As("").GetText("/healthz");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, "ok\n");
}

TEST_F(ServerTest, RevokedTokenGets401AtOnceOnTheRunningServer) {
  auto before = As(editor_).Get("/api/v1/workloads/wl-20260101-0000000a");
  ASSERT_TRUE(before.ok());
  auto cli_side = TokenStore::Open(dir_);  // as `seedctl token revoke` does
  ASSERT_TRUE(cli_side.ok());
  std::string id = tokens_->Check(editor_).who->token_id;
  ASSERT_TRUE((*cli_side)->Revoke(id).ok());
  auto after = As(editor_).Get("/api/v1/workloads/wl-20260101-0000000a");
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().code, "UNAUTHENTICATED");
  EXPECT_EQ(after.error().message.rfind("token " + id + " was revoked at ", 0), 0u)
      << after.error().message;
  // The refusal is in the audit log, with where it came from; never the token.
  auto entries = audit_->List(AuditQuery{});
  ASSERT_TRUE(entries.ok());
  ASSERT_FALSE(entries->empty());
  const AuditEntry& last = entries->back();
  EXPECT_EQ(last.verb, "authenticate");
  EXPECT_EQ(last.result, "UNAUTHENTICATED");
  EXPECT_EQ(last.object_id, id);
  EXPECT_NE(last.message.find("revoked token from 127.0.0.1"), std::string::npos) << last.message;
  EXPECT_EQ(last.message.find(editor_), std::string::npos);
}

TEST_F(ServerTest, RepeatedBadTokensFromOneAddressGet429WithRetryAfter) {
  for (int i = 0; i < kMaxFailedAuths; ++i) {
    auto r = As("rsl_guess" + std::to_string(i)).Get("/api/v1/workloads");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, "UNAUTHENTICATED") << i;
  }
  // Over the limit: refused before the token is even looked at, a good one included.
  std::string reply = testing::RawRequest(server_->port(), "GET", "/api/v1/workloads", admin_);
  EXPECT_EQ(reply.rfind("HTTP/1.1 429", 0), 0u) << reply;
  EXPECT_NE(reply.find("Retry-After: "), std::string::npos) << reply;
  EXPECT_NE(reply.find("TOO_MANY_REQUESTS"), std::string::npos) << reply;
  // Public routes stay open.
  EXPECT_TRUE(As("").GetText("/healthz").ok());
  auto entries = audit_->List(AuditQuery{});
  ASSERT_TRUE(entries.ok());
  bool limited = false;
  for (const auto& e : *entries) limited |= e.message.find("address limited") != std::string::npos;
  EXPECT_TRUE(limited);
}

TEST_F(ServerTest, OtherNamespacesObjectsAreNotFoundAndListsForbidden) {
  auto mine = As(viewer_).Get("/api/v1/workloads/wl-20260101-0000000a");
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ((*mine)["metadata"]["namespace"], "risk");
  auto other = As(viewer_).Get("/api/v1/workloads/wl-20260101-0000000b");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, "NOT_FOUND");
  auto list = As(editor_).Get("/api/v1/namespaces/ads/workloads");
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.error().code, "FORBIDDEN");
  auto admin = As(admin_).Get("/api/v1/workloads/wl-20260101-0000000b");
  EXPECT_TRUE(admin.ok());
  auto malformed = As(admin_).Get("/api/v1/workloads/not-an-id");
  ASSERT_FALSE(malformed.ok());
  EXPECT_EQ(malformed.error().code, "NOT_FOUND");
}

TEST_F(ServerTest, ViewerCannotSubmitEditorCanAndBothAreAudited) {
  auto denied = As(viewer_).Post("/api/v1/workloads", "metadata: {name: w}", "application/yaml");
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().code, "FORBIDDEN");
  auto ok = As(editor_).Post("/api/v1/workloads", "metadata: {name: w}", "application/yaml");
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_EQ((*ok)["metadata"]["namespace"], "risk");  // the token's default namespace
  EXPECT_EQ(service_.last_subject, "eddie");
  auto entries = audit_->List({});
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].subject, "vera");
  EXPECT_EQ((*entries)[0].result, "FORBIDDEN");
  EXPECT_EQ((*entries)[1].subject, "eddie");
  EXPECT_EQ((*entries)[1].object_id, "wl-20260101-0000000c");
  EXPECT_EQ((*entries)[1].result, "OK");
}

TEST_F(ServerTest, NamespaceFlagMustMatchTheObjects) {
  auto r = As(admin_).Post("/api/v1/namespaces/risk/workloads",
                           "metadata:\n  name: w\n  namespace: ads\n", "application/yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "INVALID_ARGUMENT");
  EXPECT_EQ(r.error().message,
            "the namespace from the provided object \"ads\" does not match the namespace \"risk\"");
}

TEST_F(ServerTest, ValidationErrorsArriveAllWithPositions) {
  Client c = As(editor_);
  auto r = c.Post("/api/v1/workloads", "bad", "application/yaml");
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(c.last_errors().size(), 2u);
  EXPECT_EQ(c.last_errors()[0].ToString(),
            "workload.yaml:3:3: SPEC_INVALID metadata.nmae: unknown field 'nmae' (did you mean "
            "'name'?)");
  EXPECT_EQ(c.last_errors()[1].message, "second");
}

TEST_F(ServerTest, SecretsAreWriteOnly) {
  auto r = As(editor_).Post("/api/v1/namespaces/risk/secrets",
                            R"({"name": "db", "data": {"PASSWORD": "hunter2-value"}})");
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(service_.secrets.at("PASSWORD"), "hunter2-value");
  EXPECT_EQ(r->dump().find("hunter2-value"), std::string::npos);
  EXPECT_EQ((*r)["keys"], Json::array({"PASSWORD"}));
  EXPECT_FALSE(r->contains("warnings"));
  // The service's warnings reach the creator.
  auto warned = As(editor_).Post("/api/v1/namespaces/risk/secrets",
                                 R"({"name": "pin", "data": {"PIN": "ab"}})");
  ASSERT_TRUE(warned.ok()) << warned.error().ToString();
  EXPECT_EQ((*warned)["warnings"], Json::array({"the value of PIN is short"}));
  auto entries = audit_->List({});
  ASSERT_TRUE(entries.ok());
  for (const auto& e : *entries) EXPECT_EQ(e.message.find("hunter2"), std::string::npos);
  auto bad =
      As(editor_).Post("/api/v1/namespaces/risk/secrets", R"({"name": "Bad_Name", "data": {}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, "INVALID_ARGUMENT");
}

TEST_F(ServerTest, MetricsNeedAdminAndCountRequests) {
  EXPECT_EQ(As(editor_).GetText("/metrics").error().code, "FORBIDDEN");
  (void)As("").Get("/api/v1/workloads");
  auto text = As(admin_).GetText("/metrics");
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("rsl_api_requests_total{route=\"/api/v1/workloads\",code=\"401\"} 1"),
            std::string::npos)
      << *text;
  EXPECT_NE(text->find("rsl_workloads{phase=\"RUNNING\"} 1"), std::string::npos);
  EXPECT_NE(text->find("# TYPE rsl_reconcile_duration_seconds histogram"), std::string::npos);
}

TEST_F(ServerTest, ClusterStateNeedsAdmin) {
  EXPECT_EQ(As(editor_).Get("/api/v1/nodes").error().code, "FORBIDDEN");
  EXPECT_EQ(As(viewer_).Get("/api/v1/cluster/status").error().code, "FORBIDDEN");
  EXPECT_TRUE(As(admin_).Get("/api/v1/cluster/status").ok());
  EXPECT_EQ(As(editor_).Get("/api/v1/datasources").error().code, "FORBIDDEN");
  EXPECT_TRUE(As(admin_).Get("/api/v1/datasources").ok());
  EXPECT_TRUE(As(viewer_).Get("/api/v1/environments").ok());
}

TEST_F(ServerTest, LogsFollowStreamsUntilTheStepEnds) {
  std::string got;
  Status st =
      As(viewer_).Stream("/api/v1/workloads/wl-20260101-0000000a/logs?step=train&follow=true",
                         [&](std::string_view chunk) {
                           got.append(chunk);
                           return true;
                         });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(got, "line 1\nline 2\nline 3\n");
  auto unknown = As(viewer_).Get("/api/v1/workloads/wl-20260101-0000000a/logs?step=trainn");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().hint, "did you mean 'train'?");
}

TEST_F(ServerTest, UnknownRouteIsJson404) {
  auto r = As(admin_).Get("/api/v2/things");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "NOT_FOUND");
  EXPECT_EQ(r.error().message, "no route GET /api/v2/things");
}

TEST_F(ServerTest, WritesAnsweredNotFoundAreAudited) {
  auto other = As(editor_).Post("/api/v1/workloads/wl-20260101-0000000b/cancel", "{}");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, "NOT_FOUND");
  auto rollback = As(editor_).Post("/api/v1/workloads/wl-20260101-0000000b/rollback", "{}");
  EXPECT_EQ(rollback.error().code, "NOT_FOUND");
  auto unknown = As(editor_).Post("/api/v1/workloads/wl-20260101-000000ff/cancel", "{}");
  EXPECT_EQ(unknown.error().code, "NOT_FOUND");
  auto entries = audit_->List({});
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 3u);
  const AuditEntry& cancel = (*entries)[0];
  EXPECT_EQ(cancel.subject, "eddie");
  EXPECT_EQ(cancel.verb, "cancel");
  EXPECT_EQ(cancel.resource, "workloads");
  EXPECT_EQ(cancel.namespace_, "ads");  // the owner's readers see who tried
  EXPECT_EQ(cancel.object_id, "wl-20260101-0000000b");
  EXPECT_EQ(cancel.result, "NOT_FOUND");
  EXPECT_EQ(cancel.message, "outside the caller's namespaces");
  EXPECT_EQ((*entries)[1].verb, "rollback");
  EXPECT_EQ((*entries)[1].result, "NOT_FOUND");
  EXPECT_EQ((*entries)[2].namespace_, "");
  EXPECT_EQ((*entries)[2].object_id, "wl-20260101-000000ff");
  EXPECT_EQ((*entries)[2].message, "no such workload");
  // The caller's own view of the audit log does not reveal the other namespace's object.
  auto mine = As(editor_).Get("/api/v1/audit");
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ((*mine)["items"].size(), 0u) << mine->dump();
}

TEST_F(ServerTest, ABodyOverTheLimitIs413WithTheJsonError) {
  Client c = As(editor_);
  auto r = c.Post("/api/v1/workloads", std::string(5 << 20, 'x'), "application/yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "INVALID_ARGUMENT");
  EXPECT_EQ(r.error().message, "request body of 5242880 bytes is over the limit of 4 MiB");
  EXPECT_FALSE(r.error().hint.empty());
}

// 100 log followers and 50 slow sockets (half-sent requests, trickling clients) at once:
// /healthz, a status request and a cancel still answer within a second, and every socket is
// closed afterwards.
TEST_F(ServerTest, SlowClientsAndFollowersDoNotStallTheApi) {
  using namespace std::chrono_literals;
  using testing::RawConn;
  int port = server_->port();
  std::vector<std::unique_ptr<RawConn>> followers, slow;
  for (int i = 0; i < 100; ++i) {
    followers.push_back(std::make_unique<RawConn>(port));
    ASSERT_TRUE(followers.back()->Send(
        "GET /api/v1/workloads/wl-20260101-0000000a/logs?step=forever&follow=true HTTP/1.1\r\n"
        "Authorization: Bearer " +
        viewer_ + "\r\n\r\n"));
  }
  for (auto& f : followers) {
    EXPECT_NE(f->ReadUntil("line 1\n", 10s).find("200 OK"), std::string::npos) << f->received();
  }
  for (int i = 0; i < 50; ++i) {
    slow.push_back(std::make_unique<RawConn>(port));
    ASSERT_TRUE(slow.back()->Send("GET /api/v1/workloads HTTP/1.1\r\nAuthorization: Bear"));
  }
  std::atomic<bool> trickling{true};
  std::thread trickle([&] {
    while (trickling) {
      for (int i = 0; i < 25; ++i) (void)slow[static_cast<size_t>(i)]->Send("e");
      std::this_thread::sleep_for(100ms);
    }
  });
  EXPECT_EQ(server_->stats().streams, 100);
  double health = testing::SecondsOf([&] { EXPECT_EQ(*As("").GetText("/healthz"), "ok\n"); });
  double status = testing::SecondsOf(
      [&] { EXPECT_TRUE(As(viewer_).Get("/api/v1/workloads/wl-20260101-0000000a").ok()); });
  double cancel = testing::SecondsOf([&] {
    EXPECT_TRUE(As(editor_).Post("/api/v1/workloads/wl-20260101-0000000a/cancel", "{}").ok());
  });
  EXPECT_LT(health, 1.0);
  EXPECT_LT(status, 1.0);
  EXPECT_LT(cancel, 1.0);
  trickling = false;
  trickle.join();
  followers.clear();
  slow.clear();
  for (int i = 0; i < 500 && server_->stats().connections > 0; ++i) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(server_->stats().connections, 0);
  EXPECT_EQ(server_->stats().streams, 0);
}

TEST(ParseListenTest, Forms) {
  std::string host;
  int port = 0;
  ASSERT_TRUE(ParseListen("127.0.0.1:7070", &host, &port).ok());
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 7070);
  ASSERT_TRUE(ParseListen(":0", &host, &port).ok());
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_FALSE(ParseListen("localhost", &host, &port).ok());
  EXPECT_FALSE(ParseListen("h:99999", &host, &port).ok());
}

// --- the web console's files and the event streams ---------------------------------------
using testing::BodyOf;
using testing::HeaderOf;
using testing::RawConn;
using testing::RawRequest;
using testing::StatusOf;

TEST_F(ServerTest, UiServesTheConsoleWithAStrictPolicy) {
  std::string index = RawRequest(server_->port(), "GET", "/ui/");
  ASSERT_EQ(StatusOf(index), 200) << index;
  EXPECT_EQ(HeaderOf(index, "Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(HeaderOf(index, "Content-Security-Policy"), kUiContentSecurityPolicy);
  EXPECT_EQ(HeaderOf(index, "X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(HeaderOf(index, "Cache-Control"), "no-cache");
  EXPECT_NE(BodyOf(index).find("<title>RSL console</title>"), std::string::npos);
  EXPECT_EQ(std::string(kUiContentSecurityPolicy).find("unsafe"), std::string::npos);

  std::string js = RawRequest(server_->port(), "GET", "/ui/app.js");
  ASSERT_EQ(StatusOf(js), 200);
  EXPECT_EQ(HeaderOf(js, "Content-Type"), "text/javascript; charset=utf-8");
  std::string etag = HeaderOf(js, "ETag");
  ASSERT_FALSE(etag.empty());
  std::string again = RawRequest(server_->port(), "GET", "/ui/app.js", "", "",
                                 std::chrono::seconds(10), "If-None-Match: " + etag + "\r\n");
  EXPECT_EQ(StatusOf(again), 304) << again;
  EXPECT_EQ(BodyOf(again), "");

  std::string bare = RawRequest(server_->port(), "GET", "/ui");
  EXPECT_EQ(StatusOf(bare), 301);
  EXPECT_EQ(HeaderOf(bare, "Location"), "/ui/");
  std::string missing = RawRequest(server_->port(), "GET", "/ui/nope.js");
  EXPECT_EQ(StatusOf(missing), 404);
  EXPECT_NE(BodyOf(missing).find("no console file \\\"nope.js\\\""), std::string::npos) << missing;
  EXPECT_EQ(StatusOf(RawRequest(server_->port(), "GET", "/ui/..%2Fserver.cc")), 404);
}

TEST_F(ServerTest, UiStreamsNeedATokenAndTheNamespace) {
  EXPECT_EQ(StatusOf(RawRequest(server_->port(), "GET", "/api/v1/watch/workloads")), 401);
  EXPECT_EQ(
      StatusOf(RawRequest(server_->port(), "GET", "/api/v1/workloads/wl-20260101-0000000a/watch")),
      401);
  // Another namespace's workload does not exist for this caller; another namespace's list is
  // refused.
  EXPECT_EQ(StatusOf(RawRequest(server_->port(), "GET",
                                "/api/v1/workloads/wl-20260101-0000000b/watch", viewer_)),
            404);
  EXPECT_EQ(StatusOf(RawRequest(server_->port(), "GET", "/api/v1/watch/workloads?namespace=ads",
                                viewer_)),
            403);
  EXPECT_EQ(
      StatusOf(RawRequest(server_->port(), "GET",
                          "/api/v1/workloads/wl-20260101-0000000a/watch?logStep=trian", viewer_)),
      404);
}

TEST_F(ServerTest, UiAWorkloadStreamIsServerSentEvents) {
  RawConn c(server_->port());
  c.Send(
      "GET /api/v1/workloads/wl-20260101-0000000a/watch?logStep=train HTTP/1.1\r\nHost: x\r\n"
      "Authorization: Bearer " +
      viewer_ + "\r\n\r\n");
  std::string got = c.ReadUntil("line 3", std::chrono::seconds(10));
  EXPECT_EQ(StatusOf(got), 200) << got;
  EXPECT_NE(got.find("Content-Type: text/event-stream; charset=utf-8\r\n"), std::string::npos);
  EXPECT_NE(got.find("Transfer-Encoding: chunked\r\n"), std::string::npos);
  EXPECT_NE(got.find("event: workload\ndata: {"), std::string::npos) << got;
  EXPECT_NE(got.find("event: log\ndata: {\"step\":\"train\",\"text\":\"line 1\\n\"}"),
            std::string::npos)
      << got;
}

TEST_F(ServerTest, UiListsPageWithLimitAndContinue) {
  std::string page =
      RawRequest(server_->port(), "GET", "/api/v1/workloads?namespace=risk&limit=1", viewer_);
  ASSERT_EQ(StatusOf(page), 200) << page;
  EXPECT_NE(BodyOf(page).find("\"total\":1"), std::string::npos) << page;
  EXPECT_EQ(BodyOf(page).find("continue"), std::string::npos) << page;
  std::string bad = RawRequest(server_->port(), "GET", "/api/v1/workloads?limit=-1", viewer_);
  EXPECT_EQ(StatusOf(bad), 400);
  EXPECT_NE(BodyOf(bad).find("query parameter limit=\\\"-1\\\" is not a non-negative integer"),
            std::string::npos)
      << bad;
}

}  // namespace
}  // namespace rsl::api
