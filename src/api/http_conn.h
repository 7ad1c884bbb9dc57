// Internal to the HTTP server (http_server.cc: the I/O thread and the workers;
// http_stream.cc: the stream thread): one client connection, and what both threads share.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "api/http_server.h"

namespace rsl::api {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kListenId = 0;  // epoll data of the listening socket
constexpr uint64_t kWakeId = 1;    // ... of the eventfd that wakes a loop
constexpr int kMaxEvents = 256;
constexpr int kMaxWaitMs = 200;  // deadlines are checked at least this often

//! Where a connection is in its request/response cycle.
enum class Phase {
  kHead,       // waiting for (the rest of) a request head
  kBody,       // head parsed, reading Content-Length bytes
  kWorking,    // a worker runs the handler; the socket is not watched
  kWriting,    // writing a plain response
  kStreaming,  // on the stream thread
  kLinger,     // answer written and write side shut: reading the client's bytes away
};

//! One client connection. Owned by one thread at a time: the I/O thread, or the stream thread
//! while it streams a body (handed over under mu_ through to_stream_ and from_stream_).
struct HttpServer::Conn {
  uint64_t id = 0;
  int fd = -1;
  std::string peer;
  std::shared_ptr<const ClientCertificate> client_cert;  // mutual TLS: every request's
  bool counted = false;   // holds a place in per_client_ (refused connections do not)
  bool refusing = false;  // over max_connections: counted in refusing_, not connections_
  bool closed = false;
  bool peer_closed = false;  // read EOF: answer what is complete, then close
  Phase phase = Phase::kHead;
  Clock::time_point deadline;
  uint32_t events = 0;  // the current epoll interest; 0 = not registered
  std::string in;
  size_t scanned = 0;  // HeadEnd() searched in[0, scanned) already
  std::string out;
  size_t out_off = 0;
  HttpRequest request;  // while its body arrives
  size_t head_len = 0;
  size_t body_len = 0;
  bool head_request = false;
  bool keep_alive = true;
  bool linger = false;  // after this answer: shut the write side and read the rest away
  int requests = 0;
  std::shared_ptr<StreamSource> stream;
  bool stream_done = false;
  Clock::time_point next_pull;
};

}  // namespace rsl::api
