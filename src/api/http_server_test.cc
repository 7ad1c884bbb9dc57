// HttpServer on loopback with raw sockets: one server per port, the limits and timeouts that
// keep slow or many clients from stalling it, streams that hold no worker, keep-alive.
#include "api/http_server.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <thread>

#include "api/http_test_util.h"
#include "base/codes.h"

namespace rsl::api {
namespace {

using testing::BodyOf;
using testing::RawConn;
using testing::RawRequest;
using testing::SecondsOf;
using testing::StatusOf;
using namespace std::chrono_literals;

// A stream that never ends: kWait forever (a follower of a step that runs for ever).
class EndlessStream : public StreamSource {
 public:
  State Next(size_t, std::string*) override { return State::kWait; }
};

// "piece 1\n" .. "piece N\n", then the end.
class CountingStream : public StreamSource {
 public:
  explicit CountingStream(int n) : n_(n) {}
  State Next(size_t, std::string* out) override {
    *out += "piece " + std::to_string(++i_) + "\n";
    return i_ < n_ ? State::kMore : State::kDone;
  }

 private:
  int n_;
  int i_ = 0;
};

class HttpServerTest : public ::testing::Test {
 protected:
  void Serve(HttpServerOptions options = {}) {
    server_ = std::make_unique<HttpServer>(options);
    server_->SetHandler([](const HttpRequest& req, HttpResponse& res) {
      std::string route = (req.method == "HEAD" ? "GET" : req.method) + " " + req.path;
      if (route == "GET /hello") {
        res.SetContent("hello " + req.Param("name") + "\n", "text/plain");
      } else if (route == "POST /echo") {
        res.SetContent(req.body, "text/plain");
      } else if (route == "GET /endless") {
        res.SetStream("text/plain", std::make_shared<EndlessStream>());
      } else if (route == "GET /count") {
        res.SetStream("text/plain", std::make_shared<CountingStream>(3));
      } else {
        HttpServer::NotFound(req, res);
      }
    });
    ASSERT_TRUE(server_->Listen("127.0.0.1", 0).ok());
    server_->Start();
  }
  // Polls until the server holds `n` connections (they close asynchronously).
  bool WaitConnections(int n, std::chrono::milliseconds timeout = 10s) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (server_->stats().connections != n) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::sleep_for(20ms);
    }
    return true;
  }

  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, ASecondServerOnTheSamePortFailsAndARestartBinds) {
  Serve();
  int port = server_->port();
  HttpServer second;
  Status st = second.Listen("127.0.0.1", port);
  ASSERT_FALSE(st.ok());
  std::string address = "127.0.0.1:" + std::to_string(port);
  EXPECT_EQ(st.error().code, codes::kConflict);
  EXPECT_EQ(st.error().message, "address " + address + " is already in use");
  EXPECT_EQ(st.error().value, address);
  EXPECT_NE(st.error().hint.find("pick another --listen port"), std::string::npos);
  // The first one still answers alone.
  EXPECT_EQ(BodyOf(RawRequest(port, "GET", "/hello?name=a%20b")), "hello a b\n");
  // Stopped, its port binds again at once although the answered connection is in TIME_WAIT
  // on the server's side (SO_REUSEADDR).
  server_->Stop();
  HttpServer restarted;
  ASSERT_TRUE(restarted.Listen("127.0.0.1", port).ok());
}

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsAndAStreamOnOneConnection) {
  Serve();
  RawConn c(server_->port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.Send("GET /hello?name=x HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_NE(c.ReadUntil("hello x\n", 5s).find("HTTP/1.1 200 OK\r\n"), std::string::npos);
  c.Forget();
  ASSERT_TRUE(c.Send("GET /count HTTP/1.1\r\nHost: h\r\n\r\n"));
  std::string streamed = c.ReadUntil("0\r\n\r\n", 5s);
  EXPECT_NE(streamed.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << streamed;
  EXPECT_NE(streamed.find("8\r\npiece 1\n\r\n8\r\npiece 2\n\r\n8\r\npiece 3\n\r\n0\r\n\r\n"),
            std::string::npos)
      << streamed;
  c.Forget();
  ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcde"));
  EXPECT_EQ(BodyOf(c.ReadUntil("abcde", 5s)), "abcde");
}

TEST_F(HttpServerTest, StreamsHoldNoWorker) {
  HttpServerOptions options;
  options.workers = 1;
  Serve(options);
  std::vector<std::unique_ptr<RawConn>> streams;
  for (int i = 0; i < 30; ++i) {
    streams.push_back(std::make_unique<RawConn>(server_->port()));
    ASSERT_TRUE(streams.back()->Send("GET /endless HTTP/1.1\r\n\r\n"));
  }
  for (auto& s : streams) EXPECT_NE(s->ReadUntil("\r\n\r\n", 5s).find("200 OK"), std::string::npos);
  EXPECT_EQ(server_->stats().streams, 30);
  std::string answer;
  double secs = SecondsOf([&] { answer = RawRequest(server_->port(), "GET", "/hello?name=y"); });
  EXPECT_EQ(BodyOf(answer), "hello y\n");
  EXPECT_LT(secs, 1.0);
  streams.clear();
  EXPECT_TRUE(WaitConnections(0)) << server_->stats().connections;
  EXPECT_EQ(server_->stats().streams, 0);
}

TEST_F(HttpServerTest, AHeadTrickledSlowerThanTheTimeoutIsCutOff) {
  HttpServerOptions options;
  options.head_timeout = 600ms;
  Serve(options);
  RawConn trickler(server_->port());
  RawConn silent(server_->port());
  std::string head = "GET /hello HTTP/1.1\r\nX-Padding: ";
  auto start = std::chrono::steady_clock::now();
  // One byte every 50 ms: each read makes progress, only the whole-head deadline stops it.
  for (int i = 0; i < 200 && trickler.Send(head.substr(i % head.size(), 1)); ++i) {
    std::this_thread::sleep_for(50ms);
    if (i > 20 && trickler.WaitClosed(1ms)) break;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(trickler.WaitClosed(5s));
  EXPECT_LT(secs, 5.0);
  EXPECT_EQ(StatusOf(trickler.received()), 408) << trickler.received();
  auto j = nlohmann::json::parse(BodyOf(trickler.received()), nullptr, false);
  EXPECT_EQ(j.value("code", ""), codes::kInvalidArgument);
  EXPECT_EQ(j.value("message", ""), "request head not complete within 600 ms");
  // A connection that sends nothing is closed without an answer.
  EXPECT_TRUE(silent.WaitClosed(5s));
  EXPECT_EQ(silent.received(), "");
  trickler.Close();
  EXPECT_TRUE(WaitConnections(0));
}

TEST_F(HttpServerTest, AHalfSentHeadStallsNobodyAndIsCutAfterTheTimeout) {
  HttpServerOptions options;
  options.workers = 1;  // a stalled client holding the one worker would stall everyone
  options.head_timeout = 1500ms;
  Serve(options);
  RawConn stalled(server_->port());
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(stalled.Send("GET /hello HTTP/1.1\r\nHost: h\r\nX-Half: "));
  // Everyone else is answered at once meanwhile.
  for (int i = 0; i < 20; ++i) {
    std::string answer;
    double secs = SecondsOf(
        [&] { answer = RawRequest(server_->port(), "GET", "/hello?name=" + std::to_string(i)); });
    EXPECT_EQ(BodyOf(answer), "hello " + std::to_string(i) + "\n");
    EXPECT_LT(secs, 1.0) << i;
  }
  EXPECT_FALSE(stalled.WaitClosed(1ms)) << "cut before its head timeout";
  ASSERT_TRUE(stalled.WaitClosed(10s));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(secs, 1.4);
  EXPECT_EQ(StatusOf(stalled.received()), 408) << stalled.received();
  auto j = nlohmann::json::parse(BodyOf(stalled.received()), nullptr, false);
  EXPECT_EQ(j.value("message", ""), "request head not complete within 1500 ms");
  EXPECT_TRUE(WaitConnections(0));
}

TEST_F(HttpServerTest, ConnectionsOverTheLimitAreAnswered503) {
  HttpServerOptions options;
  options.max_connections = 3;
  Serve(options);
  std::vector<std::unique_ptr<RawConn>> held;
  for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<RawConn>(server_->port()));
  ASSERT_TRUE(WaitConnections(3));
  std::string refused = RawRequest(server_->port(), "GET", "/hello");
  EXPECT_EQ(StatusOf(refused), 503) << refused;
  EXPECT_EQ(testing::HeaderOf(refused, "Retry-After"), "1") << refused;
  auto j = nlohmann::json::parse(BodyOf(refused), nullptr, false);
  EXPECT_EQ(j.value("code", ""), "TOO_MANY_REQUESTS");
  EXPECT_EQ(j.value("message", ""), "the controller is serving its limit of 3 connections");
  EXPECT_EQ(server_->stats().connections, 3);
  held.pop_back();
  ASSERT_TRUE(WaitConnections(2));
  EXPECT_EQ(BodyOf(RawRequest(server_->port(), "GET", "/hello?name=z")), "hello z\n");
}

TEST_F(HttpServerTest, ConnectionsPerClientAreBounded) {
  HttpServerOptions options;
  options.max_connections_per_client = 3;
  Serve(options);
  std::vector<std::unique_ptr<RawConn>> held;
  for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<RawConn>(server_->port()));
  ASSERT_TRUE(WaitConnections(3));
  std::string refused = RawRequest(server_->port(), "GET", "/hello");
  EXPECT_EQ(StatusOf(refused), 429) << refused;
  auto j = nlohmann::json::parse(BodyOf(refused), nullptr, false);
  EXPECT_EQ(j.value("code", ""), "TOO_MANY_REQUESTS");
  EXPECT_EQ(j.value("message", ""), "too many connections from 127.0.0.1 (limit 3)");
  held.pop_back();
  ASSERT_TRUE(WaitConnections(2));
  EXPECT_EQ(BodyOf(RawRequest(server_->port(), "GET", "/hello?name=z")), "hello z\n");
}

TEST_F(HttpServerTest, BodyLimitsAnswerTheJsonError) {
  HttpServerOptions options;
  options.max_body_bytes = 4 << 20;
  Serve(options);
  // Over the limit: refused from the head alone, before the body is read.
  RawConn big(server_->port());
  ASSERT_TRUE(big.Send("POST /echo HTTP/1.1\r\nContent-Length: 5000000\r\n\r\n"));
  big.WaitClosed(5s);
  std::string answer = big.received();
  EXPECT_EQ(StatusOf(answer), 413) << answer;
  auto j = nlohmann::json::parse(BodyOf(answer), nullptr, false);
  EXPECT_EQ(j.value("code", ""), codes::kInvalidArgument);
  EXPECT_EQ(j.value("message", ""), "request body of 5000000 bytes is over the limit of 4 MiB");
  EXPECT_FALSE(j["details"].value("hint", "").empty());
  // No Content-Length, or a chunked body: 411.
  RawConn bare(server_->port());
  ASSERT_TRUE(bare.Send("POST /echo HTTP/1.1\r\n\r\n"));
  bare.WaitClosed(5s);
  answer = bare.received();
  EXPECT_EQ(StatusOf(answer), 411) << answer;
  j = nlohmann::json::parse(BodyOf(answer), nullptr, false);
  EXPECT_EQ(j.value("message", ""), "POST without Content-Length");
  EXPECT_EQ(j["details"].value("hint", ""),
            "send the body with a Content-Length header (at most 4 MiB)");
  answer = RawRequest(server_->port(), "GET", "/no/such/route");
  EXPECT_EQ(StatusOf(answer), 404);
  EXPECT_EQ(nlohmann::json::parse(BodyOf(answer), nullptr, false).value("message", ""),
            "no route GET /no/such/route");
  RawConn garbage(server_->port());
  ASSERT_TRUE(garbage.Send("HELLO\r\n\r\n"));
  garbage.WaitClosed(5s);
  EXPECT_EQ(StatusOf(garbage.received()), 400);
}

}  // namespace
}  // namespace rsl::api
