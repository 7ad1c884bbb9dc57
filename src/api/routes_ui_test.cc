// The console's files and the event streams through the real server: headers, caching,
// authentication, and the rules the console's files must keep (no inline code, text only).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "api/fake_service_test_util.h"
#include "api/http_test_util.h"
#include "api/server.h"
#include "api/ui_assets.h"

namespace rsl::api {
namespace {

using testing::BodyOf;
using testing::RawRequest;
using testing::StatusOf;

class UiRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "rsl-ui-test-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    tokens_ = std::move(TokenStore::Open(dir_).value());
    audit_ = std::move(AuditLog::Open(dir_).value());
    DescribeControllerMetrics(&metrics_);
    server_ = std::make_unique<ApiServer>(&service_, tokens_.get(), audit_.get(), &metrics_);
    ASSERT_TRUE(server_->Start("127.0.0.1", 0).ok());
    viewer_ = *tokens_->Create("vera", Role::kViewer, {"risk"});
  }
  void TearDown() override {
    server_->Stop();
    std::filesystem::remove_all(dir_);
  }
  std::string Get(const std::string& target, const std::string& token = "",
                  const std::string& extra_headers = "") {
    testing::RawConn c(server_->port());
    std::string req = "GET " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
    if (!token.empty()) req += "Authorization: Bearer " + token + "\r\n";
    c.Send(req + extra_headers + "\r\n");
    c.WaitClosed(std::chrono::seconds(10));
    return c.received();
  }
  // The value of header `name` in a raw answer ("" when absent).
  static std::string HeaderOf(const std::string& answer, const std::string& name) {
    std::smatch m;
    std::regex re("\r\n" + name + ": ([^\r]*)\r\n", std::regex::icase);
    return std::regex_search(answer, m, re) ? m[1].str() : "";
  }

  std::string dir_;
  testing::FakeService service_;
  std::unique_ptr<TokenStore> tokens_;
  std::unique_ptr<AuditLog> audit_;
  Metrics metrics_;
  std::unique_ptr<ApiServer> server_;
  std::string viewer_;
};

TEST_F(UiRoutesTest, ServesTheConsoleWithAStrictPolicy) {
  std::string index = Get("/ui/");
  ASSERT_EQ(StatusOf(index), 200) << index;
  EXPECT_EQ(HeaderOf(index, "Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(HeaderOf(index, "Content-Security-Policy"), kUiContentSecurityPolicy);
  EXPECT_EQ(HeaderOf(index, "X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(HeaderOf(index, "Cache-Control"), "no-cache");
  EXPECT_NE(BodyOf(index).find("<title>RSL console</title>"), std::string::npos);
  EXPECT_EQ(std::string(kUiContentSecurityPolicy).find("unsafe"), std::string::npos);

  std::string js = Get("/ui/app.js");
  ASSERT_EQ(StatusOf(js), 200);
  EXPECT_EQ(HeaderOf(js, "Content-Type"), "text/javascript; charset=utf-8");
  std::string etag = HeaderOf(js, "ETag");
  ASSERT_FALSE(etag.empty());
  std::string again = Get("/ui/app.js", "", "If-None-Match: " + etag + "\r\n");
  EXPECT_EQ(StatusOf(again), 304) << again;
  EXPECT_EQ(BodyOf(again), "");

  std::string bare = Get("/ui");
  EXPECT_EQ(StatusOf(bare), 301);
  EXPECT_EQ(HeaderOf(bare, "Location"), "/ui/");
  std::string missing = Get("/ui/nope.js");
  EXPECT_EQ(StatusOf(missing), 404);
  EXPECT_NE(BodyOf(missing).find("no console file \\\"nope.js\\\""), std::string::npos) << missing;
  EXPECT_EQ(StatusOf(Get("/ui/..%2Fserver.cc")), 404);
}

TEST_F(UiRoutesTest, StreamsNeedATokenAndTheNamespace) {
  EXPECT_EQ(StatusOf(Get("/api/v1/watch/workloads")), 401);
  EXPECT_EQ(StatusOf(Get("/api/v1/workloads/wl-20260101-0000000a/watch")), 401);
  // Another namespace's workload does not exist for this caller; another namespace's list is
  // refused.
  EXPECT_EQ(StatusOf(Get("/api/v1/workloads/wl-20260101-0000000b/watch", viewer_)), 404);
  EXPECT_EQ(StatusOf(Get("/api/v1/watch/workloads?namespace=ads", viewer_)), 403);
  EXPECT_EQ(StatusOf(Get("/api/v1/workloads/wl-20260101-0000000a/watch?logStep=trian", viewer_)),
            404);
}

TEST_F(UiRoutesTest, AWorkloadStreamIsServerSentEvents) {
  testing::RawConn c(server_->port());
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

TEST_F(UiRoutesTest, ListsPageWithLimitAndContinue) {
  std::string page = Get("/api/v1/workloads?namespace=risk&limit=1", viewer_);
  ASSERT_EQ(StatusOf(page), 200) << page;
  EXPECT_NE(BodyOf(page).find("\"total\":1"), std::string::npos) << page;
  EXPECT_EQ(BodyOf(page).find("continue"), std::string::npos) << page;
  std::string bad = Get("/api/v1/workloads?limit=-1", viewer_);
  EXPECT_EQ(StatusOf(bad), 400);
  EXPECT_NE(BodyOf(bad).find("query parameter limit=\\\"-1\\\" is not a non-negative integer"),
            std::string::npos)
      << bad;
}

// What the CSP enforces in the browser, checked on the files: no inline script or style, no
// event-handler attributes, no eval, and data is never parsed as HTML.
TEST(UiAssetsTest, HoldNoInlineCodeAndNeverParseDataAsHtml) {
  ASSERT_NE(FindUiAsset(""), nullptr);
  ASSERT_NE(FindUiAsset("app.js"), nullptr);
  for (const UiAsset& a : UiAssets()) {
    std::string text(reinterpret_cast<const char*>(a.data), a.size);
    std::string path = a.path;
    if (path.size() > 5 && path.substr(path.size() - 5) == ".html") {
      EXPECT_FALSE(std::regex_search(text, std::regex("<script(?![^>]*\\bsrc=)[^>]*>")))
          << path << ": an inline script";
      EXPECT_EQ(text.find("<style"), std::string::npos) << path;
      EXPECT_FALSE(std::regex_search(text, std::regex("\\sstyle=|\\son[a-z]+=", std::regex::icase)))
          << path << ": an inline style or event handler";
    }
    if (path.size() > 3 && path.substr(path.size() - 3) == ".js") {
      for (const char* banned :
           {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
            "new Function", "setAttribute('style'", ".style.cssText", "localStorage"}) {
        EXPECT_EQ(text.find(banned), std::string::npos) << path << " uses " << banned;
      }
    }
  }
}

}  // namespace
}  // namespace rsl::api
