// HttpSend against a local cpp-httplib server on a free port.
#include "base/http_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <thread>

#include "base/codes.h"

namespace rsl {
namespace {

class HttpClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Get("/hello", [](const httplib::Request& req, httplib::Response& res) {
      res.set_header("X-Echo", req.get_header_value("X-Test"));
      res.set_content("hello", "text/plain");
    });
    server_.Put("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.status = 201;
      res.set_content(req.method + ":" + req.body, "text/plain");
    });
    server_.Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(req.method + ":" + req.get_header_value("Content-Type") + ":" + req.body,
                      "text/plain");
    });
    server_.Delete("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(req.method, "text/plain");
    });
    server_.Get("/moved", [](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("/hello", 307);
    });
    server_.Get("/fail", [](const httplib::Request&, httplib::Response& res) {
      res.status = 503;
      res.set_content("busy", "text/plain");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  void TearDown() override {
    server_.stop();
    thread_.join();
  }
  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(HttpClientTest, GetReturnsStatusBodyAndLowerCaseHeaders) {
  HttpRequest req;
  req.url = Url("/hello");
  req.headers = {"X-Test: 42"};
  auto r = HttpSend(req);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");
  EXPECT_EQ(r->headers["x-echo"], "42");
  EXPECT_EQ(r->headers["content-length"], "5");
}

TEST_F(HttpClientTest, HeadReadsNoBody) {
  HttpRequest req;
  req.method = "HEAD";
  req.url = Url("/hello");
  auto r = HttpSend(req);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "");
  EXPECT_EQ(r->headers["content-length"], "5");
}

TEST_F(HttpClientTest, PutPostAndDeleteSendTheirMethodAndBody) {
  HttpRequest req;
  req.method = "PUT";
  req.url = Url("/echo");
  req.body = "payload";
  auto put = HttpSend(req);
  ASSERT_TRUE(put.ok()) << put.error().ToString();
  EXPECT_EQ(put->status, 201);
  EXPECT_EQ(put->body, "PUT:payload");

  req.method = "POST";
  req.headers = {"Content-Type: application/json"};
  req.body = "{}";
  auto post = HttpSend(req);
  ASSERT_TRUE(post.ok()) << post.error().ToString();
  EXPECT_EQ(post->body, "POST:application/json:{}");

  req.method = "DELETE";
  auto del = HttpSend(req);
  ASSERT_TRUE(del.ok()) << del.error().ToString();
  EXPECT_EQ(del->body, "DELETE");
}

TEST_F(HttpClientTest, ErrorStatusesAreResponses) {
  HttpRequest req;
  req.url = Url("/fail");
  auto r = HttpSend(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body, "busy");
  req.url = Url("/nothing-here");
  auto missing = HttpSend(req);
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
}

TEST_F(HttpClientTest, RedirectsAreFollowedOnlyWhenAsked) {
  HttpRequest req;
  req.url = Url("/moved");
  auto stay = HttpSend(req);
  ASSERT_TRUE(stay.ok());
  EXPECT_EQ(stay->status, 307);
  EXPECT_EQ(stay->headers["location"], "/hello");
  req.follow_redirects = true;
  auto follow = HttpSend(req);
  ASSERT_TRUE(follow.ok());
  EXPECT_EQ(follow->status, 200);
  EXPECT_EQ(follow->body, "hello");
  EXPECT_EQ(follow->headers["location"], "/hello");  // the redirect's header is kept
}

TEST(HttpClientErrorTest, NoAnswerIsAnIoErrorWithTheUrlButNoSecrets) {
  HttpRequest req;
  req.url = "http://user:pw@127.0.0.1:1/path";  // port 1: nothing listens
  req.headers = {"Authorization: Bearer s3cr3t"};
  req.connect_timeout_ms = 2000;
  std::string curl_error = "stale";
  auto r = HttpSend(req, &curl_error);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, codes::kIoError);
  EXPECT_FALSE(curl_error.empty());
  EXPECT_NE(curl_error, "stale");
  EXPECT_EQ(r.error().message, "cannot reach http://***@127.0.0.1:1/path: " + curl_error);
  EXPECT_EQ(r.error().value, "http://***@127.0.0.1:1/path");
  EXPECT_EQ(r.error().ToString().find("s3cr3t"), std::string::npos);
  EXPECT_EQ(r.error().ToString().find("pw"), std::string::npos);
}

TEST(RedactUrlTest, HidesUserInfoOnly) {
  EXPECT_EQ(RedactUrl("https://u:p@host/x"), "https://***@host/x");
  EXPECT_EQ(RedactUrl("https://host/x@y"), "https://host/x@y");
  EXPECT_EQ(RedactUrl("https://host"), "https://host");
  EXPECT_EQ(RedactUrl("not a url"), "not a url");
}

}  // namespace
}  // namespace rsl
