// The router on its own: matching, path parameters, access levels, error rendering and
// per-route metrics, without sockets.
#include "api/router.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "api/fake_service_test_util.h"
#include "base/codes.h"

namespace rsl::api {
namespace {

class RouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "rsl-router-test-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    tokens_ = std::move(TokenStore::Open(dir_).value());
    DescribeControllerMetrics(&metrics_);
    editor_ = *tokens_->Create("eddie", Role::kEditor, {"risk"});
    admin_ = *tokens_->Create("ada", Role::kAdmin, {"*"});
    router_ = std::make_unique<Router>(Services{&service_, tokens_.get(), nullptr, &metrics_, {}});
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  HttpResponse Call(const std::string& method, const std::string& path,
                    const std::string& token = "") {
    HttpRequest req;
    req.method = method;
    req.path = path;
    if (!token.empty()) req.headers.push_back({"authorization", "Bearer " + token});
    HttpResponse res;
    router_->Dispatch(req, res);
    return res;
  }
  static Json Body(const HttpResponse& res) { return Json::parse(res.body); }

  // A handler that answers its path parameters and the caller's subject.
  static Result<Reply> Echo(const Services&, RequestContext& c) {
    Json params = Json::object();
    for (const auto& [k, v] : c.path_params) params[k] = v;
    return JsonReply({{"params", params}, {"subject", c.who.subject}});
  }

  std::string dir_;
  testing::FakeService service_;
  std::unique_ptr<TokenStore> tokens_;
  Metrics metrics_;
  std::unique_ptr<Router> router_;
  std::string editor_, admin_;
};

TEST_F(RouterTest, PathParametersReachTheHandler) {
  router_->Get("/api/v1/namespaces/{ns}/things/{id}", Access::Public(), Echo);
  HttpResponse res = Call("GET", "/api/v1/namespaces/risk-2/things/a.b_C");
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.content_type, "application/json");
  EXPECT_EQ(Body(res)["params"], (Json{{"ns", "risk-2"}, {"id", "a.b_C"}}));
  // {ns} is a namespace name; a parameter is one whole, non-empty segment.
  EXPECT_EQ(Call("GET", "/api/v1/namespaces/Risk/things/x").status, 404);
  EXPECT_EQ(Call("GET", "/api/v1/namespaces/risk/things/").status, 404);
  EXPECT_EQ(Call("GET", "/api/v1/namespaces/risk/things/x/y").status, 404);
  EXPECT_EQ(Call("GET", "/api/v1/namespaces//things/x").status, 404);
}

TEST_F(RouterTest, FirstMatchingRouteWinsAndHeadIsServedByGet) {
  router_->Get("/a/{id}", Access::Public(), [](const Services&, RequestContext&) {
    return JsonReply({{"route", "param"}});
  });
  router_->Get("/a/fixed", Access::Public(), [](const Services&, RequestContext&) {
    return JsonReply({{"route", "fixed"}});
  });
  EXPECT_EQ(Body(Call("GET", "/a/fixed"))["route"], "param");
  EXPECT_EQ(Body(Call("HEAD", "/a/x"))["route"], "param");
  std::map<std::string, std::string> params;
  const Route* r = router_->Find("GET", "/a/x", &params);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->pattern, "/a/{id}");
  EXPECT_EQ(params.at("id"), "x");
  EXPECT_EQ(router_->Find("POST", "/a/x", &params), nullptr);
}

TEST_F(RouterTest, UnknownPathAndMethodMismatchAreTheJson404) {
  router_->Get("/healthz", Access::Public(), Echo);
  for (auto [method, path] : {std::pair<std::string, std::string>{"GET", "/api/v2/things"},
                              {"POST", "/healthz"},
                              {"DELETE", "/healthz"},
                              {"GET", "/healthz/"}}) {
    HttpResponse res = Call(method, path);
    EXPECT_EQ(res.status, 404) << method << " " << path;
    Json body = Body(res);
    EXPECT_EQ(body["code"], "NOT_FOUND");
    EXPECT_EQ(body["message"], "no route " + method + " " + path);
    EXPECT_EQ(body["details"]["hint"], "see docs/api.md for the routes");
  }
  // Unknown routes are not counted: their paths would make labels without bound.
  EXPECT_EQ(metrics_.Render().find("/api/v2/things"), std::string::npos);
}

// Found by api_request_fuzzer: a path that is not UTF-8 made the 404's JSON throw.
TEST_F(RouterTest, BytesThatAreNotUtf8AreEchoedAsReplacementCharacters) {
  router_->Get("/w/{id}", Access::Public(), Echo);
  HttpResponse missing = Call("GET", "/x\xff");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(Body(missing)["message"], "no route GET /x\xef\xbf\xbd");
  HttpResponse echoed = Call("GET", "/w/a\xc3");
  EXPECT_EQ(echoed.status, 200);
  EXPECT_EQ(Body(echoed)["params"]["id"], "a\xef\xbf\xbd");
}

TEST_F(RouterTest, AccessLevelsAreEnforcedBeforeTheHandler) {
  int calls = 0;
  Handler counted = [&calls](const Services& s, RequestContext& c) {
    ++calls;
    return Echo(s, c);
  };
  router_->Get("/public", Access::Public(), counted);
  router_->Get("/token", Access::Token(), counted);
  router_->Get("/admin", Access::Admin("list nodes"), counted);

  EXPECT_EQ(Call("GET", "/public").status, 200);
  EXPECT_EQ(calls, 1);

  HttpResponse none = Call("GET", "/token");
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(Body(none)["message"], "no bearer token");
  ASSERT_EQ(none.headers.size(), 1u);
  EXPECT_EQ(none.headers[0].first, "WWW-Authenticate");
  EXPECT_EQ(none.headers[0].second, "Bearer realm=\"rsl\"");
  HttpResponse bad = Call("GET", "/token", editor_ + "0");
  EXPECT_EQ(bad.status, 401);
  EXPECT_EQ(Body(bad)["message"], "unknown token");
  EXPECT_EQ(calls, 1);

  HttpResponse ok = Call("GET", "/token", editor_);
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(Body(ok)["subject"], "eddie");
  EXPECT_EQ(calls, 2);

  HttpResponse refused = Call("GET", "/admin", editor_);
  EXPECT_EQ(refused.status, 403);
  EXPECT_EQ(Body(refused)["message"],
            "subject \"eddie\" (role editor) cannot list nodes in namespace \"*\"");
  EXPECT_EQ(Body(refused)["details"]["hint"],
            "ask an admin for a token with a role in this namespace");
  EXPECT_EQ(Call("GET", "/admin").status, 401);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(Call("GET", "/admin", admin_).status, 200);
  EXPECT_EQ(calls, 3);
}

TEST_F(RouterTest, ErrorsRenderAsJsonAndEveryRouteIsCountedUnderItsPattern) {
  router_->Post("/v/{id}", Access::Public(),
                [](const Services&, RequestContext& c) -> Result<Reply> {
                  c.errors = {Error(codes::kSpecInvalid, "first").Path("a"),
                              Error(codes::kSpecInvalid, "second")};
                  return c.errors.front();
                });
  router_->Get("/boom", Access::Public(), [](const Services&, RequestContext&) -> Result<Reply> {
    throw std::runtime_error("kaput");
  });
  router_->Get("/text", Access::Public(), [](const Services&, RequestContext&) -> Result<Reply> {
    Reply r;
    r.status = 202;
    r.text = "hi\n";
    r.content_type = "text/plain";
    return r;
  });

  HttpResponse invalid = Call("POST", "/v/1");
  EXPECT_EQ(invalid.status, 400);
  Json body = Body(invalid);
  EXPECT_EQ(body["code"], "SPEC_INVALID");
  EXPECT_EQ(body["message"], "first");
  ASSERT_EQ(body["details"]["errors"].size(), 2u);
  EXPECT_EQ(body["details"]["errors"][1]["message"], "second");

  HttpResponse boom = Call("GET", "/boom");
  EXPECT_EQ(boom.status, 500);
  EXPECT_EQ(Body(boom)["message"], "unexpected failure: kaput");

  HttpResponse text = Call("GET", "/text");
  EXPECT_EQ(text.status, 202);
  EXPECT_EQ(text.body, "hi\n");
  EXPECT_EQ(text.content_type, "text/plain");

  (void)Call("POST", "/v/2");
  EXPECT_EQ(metrics_.Value("rsl_api_requests_total", {{"route", "/v/{id}"}, {"code", "400"}}), 2);
  EXPECT_EQ(metrics_.Value("rsl_api_requests_total", {{"route", "/boom"}, {"code", "500"}}), 1);
  EXPECT_EQ(metrics_.Value("rsl_api_requests_total", {{"route", "/text"}, {"code", "202"}}), 1);
  EXPECT_NE(metrics_.Render().find("rsl_api_request_duration_seconds_count{route=\"/v/{id}\"} 2"),
            std::string::npos)
      << metrics_.Render();
}

}  // namespace
}  // namespace rsl::api
