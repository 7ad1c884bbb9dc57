// Reading request heads (http_parse.h): no sockets, the server's limits as arguments.
#include "api/http_parse.h"

#include <gtest/gtest.h>

namespace rsl::api {
namespace {

constexpr size_t kMaxBody = 4 << 20;

TEST(HttpParseTest, PercentDecode) {
  EXPECT_EQ(PercentDecode("a%20b%2Fc", false), "a b/c");
  EXPECT_EQ(PercentDecode("a+b", false), "a+b");
  EXPECT_EQ(PercentDecode("a+b", true), "a b");
  EXPECT_EQ(PercentDecode("100%", false), "100%");  // malformed escapes are kept
  EXPECT_EQ(PercentDecode("%zz", false), "%zz");
}

TEST(HttpParseTest, ParseQuery) {
  std::multimap<std::string, std::string> params;
  ParseQuery("a=1&&b=x+y&a=2&flag", &params);
  EXPECT_EQ(params.count("a"), 2u);
  EXPECT_EQ(params.find("b")->second, "x y");
  EXPECT_EQ(params.find("flag")->second, "");
}

TEST(HttpParseTest, HeadEnd) {
  EXPECT_EQ(HeadEnd("GET / HTTP/1.1\r\nHost: x\r\n\r\nbody", 0), 27u);
  EXPECT_EQ(HeadEnd("GET / HTTP/1.1\nHost: x\n\nbody", 0), 24u);
  EXPECT_EQ(HeadEnd("GET / HTTP/1.1\r\nHost: x\r\n", 0), std::string::npos);
}

TEST(HttpParseTest, ParsesARequestHead) {
  HttpRequest r;
  RequestHead h = ParseHead(
      "POST /v1/workloads%2Fx?dry=1&n=a%20b HTTP/1.1\r\nHost: h\r\nContent-Length: 12\r\n"
      "X-Thing:  v \r\nExpect: 100-continue\r\n\r\n",
      kMaxBody, &r);
  EXPECT_EQ(h.refuse, 0);
  EXPECT_TRUE(h.keep_alive);
  EXPECT_TRUE(h.expect_continue);
  EXPECT_EQ(h.body_len, 12u);
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.target, "/v1/workloads%2Fx?dry=1&n=a%20b");
  EXPECT_EQ(r.path, "/v1/workloads/x");
  EXPECT_EQ(r.Param("n"), "a b");
  EXPECT_EQ(r.Header("x-thing"), "v");
  EXPECT_EQ(r.Header("X-THING"), "v");
}

TEST(HttpParseTest, KeepAliveByVersionAndConnectionHeader) {
  HttpRequest a, b, c;
  EXPECT_FALSE(ParseHead("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", kMaxBody, &a).keep_alive);
  EXPECT_FALSE(ParseHead("GET / HTTP/1.0\r\n\r\n", kMaxBody, &b).keep_alive);
  EXPECT_TRUE(
      ParseHead("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", kMaxBody, &c).keep_alive);
}

TEST(HttpParseTest, Refusals) {
  auto refuse = [](const std::string& head, size_t max_body = kMaxBody) {
    HttpRequest r;
    return ParseHead(head, max_body, &r);
  };
  EXPECT_EQ(refuse("GET /\r\n\r\n").refuse, 400);
  EXPECT_EQ(refuse("GET / HTTP/2\r\n\r\n").error.message, "malformed HTTP request: bad version");
  EXPECT_EQ(refuse("GET x HTTP/1.1\r\n\r\n").error.message, "malformed HTTP request: bad target");
  EXPECT_EQ(refuse("GET / HTTP/1.1\r\n bad\r\n\r\n").refuse, 400);
  EXPECT_EQ(refuse("POST / HTTP/1.1\r\n\r\n").refuse, 411);
  EXPECT_EQ(refuse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").refuse, 411);
  EXPECT_EQ(
      refuse("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n").error.message,
      "malformed HTTP request: conflicting Content-Length");
  EXPECT_EQ(refuse("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n").refuse, 400);
  RequestHead big = refuse("POST / HTTP/1.1\r\nContent-Length: 3145729\r\n\r\n", 3 << 20);
  EXPECT_EQ(big.refuse, 413);
  EXPECT_EQ(big.error.message, "request body of 3145729 bytes is over the limit of 3 MiB");
}

}  // namespace
}  // namespace rsl::api
