// Test-only: a raw TCP client for what a well-behaved HTTP client never does (half-sent
// requests, trickled bytes, hundreds of open sockets), and one-shot HTTP requests over it.
// Header-only so the unit tests (src/api) and the controller tests (tests/api) share it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <string>
#include <string_view>

namespace rsl::api::testing {

class RawConn {
 public:
  //! Connects to 127.0.0.1:port (blocking); ok() says whether it worked.
  explicit RawConn(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      Close();
    }
  }
  ~RawConn() { Close(); }
  RawConn(const RawConn&) = delete;
  RawConn& operator=(const RawConn&) = delete;

  bool ok() const { return fd_ >= 0; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  bool Send(std::string_view data) {
    while (!data.empty() && fd_ >= 0) {
      ssize_t w = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (w <= 0) return false;
      data.remove_prefix(static_cast<size_t>(w));
    }
    return fd_ >= 0;
  }

  //! Reads until `needle` has arrived, the peer closes or `timeout` passes; all that came.
  std::string ReadUntil(const std::string& needle, std::chrono::milliseconds timeout) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (fd_ >= 0 && (needle.empty() || got_.find(needle) == std::string::npos)) {
      auto left =
          std::chrono::ceil<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[65536];
      ssize_t r = ::recv(fd_, buf, sizeof(buf), 0);
      if (r <= 0) {
        closed_ = true;
        break;
      }
      got_.append(buf, static_cast<size_t>(r));
    }
    return got_;
  }
  //! Reads until the peer closes (or timeout); true if it closed.
  bool WaitClosed(std::chrono::milliseconds timeout) {
    ReadUntil("", timeout);
    return closed_;
  }
  //! Everything received so far.
  const std::string& received() const { return got_; }
  void Forget() { got_.clear(); }

 private:
  int fd_ = -1;
  bool closed_ = false;
  std::string got_;
};

//! One request on a fresh connection ("Connection: close"), with `extra_headers` (whole
//! "Name: value\r\n" lines); the whole answer, or "" on timeout.
inline std::string RawRequest(int port, const std::string& method, const std::string& target,
                              const std::string& token = "", const std::string& body = "",
                              std::chrono::milliseconds timeout = std::chrono::seconds(10),
                              const std::string& extra_headers = "") {
  RawConn c(port);
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!token.empty()) req += "Authorization: Bearer " + token + "\r\n";
  req += extra_headers;
  if (method == "POST") req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  if (!c.Send(req)) return "";
  if (!c.WaitClosed(timeout)) return "";
  return c.received();
}

//! The body of a raw answer (after the blank line); chunked bodies are left encoded.
inline std::string BodyOf(const std::string& answer) {
  size_t end = answer.find("\r\n\r\n");
  return end == std::string::npos ? "" : answer.substr(end + 4);
}

//! The value of header `name` (any case) in a raw answer, "" when absent.
inline std::string HeaderOf(const std::string& answer, const std::string& name) {
  size_t end = answer.find("\r\n\r\n");
  std::string head = answer.substr(0, end);
  for (size_t at = head.find("\r\n"); at != std::string::npos; at = head.find("\r\n", at + 2)) {
    size_t colon = head.find(':', at + 2);
    size_t eol = head.find("\r\n", at + 2);
    if (colon == std::string::npos || (eol != std::string::npos && colon > eol)) continue;
    std::string key = head.substr(at + 2, colon - at - 2);
    if (key.size() != name.size() ||
        !std::equal(key.begin(), key.end(), name.begin(),
                    [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
      continue;
    }
    size_t v = colon + 1;
    while (v < head.size() && head[v] == ' ') ++v;
    return head.substr(v, (eol == std::string::npos ? head.size() : eol) - v);
  }
  return "";
}

//! The status code of a raw answer, 0 when there is none.
inline int StatusOf(const std::string& answer) {
  if (answer.compare(0, 9, "HTTP/1.1 ") != 0 || answer.size() < 12) return 0;
  return std::stoi(answer.substr(9, 3));
}

//! Seconds `f` took.
template <typename F>
double SecondsOf(F&& f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace rsl::api::testing
