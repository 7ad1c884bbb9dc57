// A small HTTP/1.1 server on epoll, built so that slow or many clients cannot stall the API:
//
//   I/O thread     accepts, reads and bounds every request (the head must arrive within
//                  head_timeout whatever the trickle rate, at most max_head_bytes; the body
//                  within body_timeout, at most max_body_bytes, Content-Length required),
//                  counts connections per client address, writes plain responses
//                  (non-blocking, so a slow reader holds no thread), keeps connections alive.
//   workers        run handlers on complete requests only; never touch a socket.
//   stream thread  writes long-lived responses (log follow, server-sent events): a handler
//                  returns a StreamSource, the connection moves to this thread, which pulls
//                  the body piece by piece as the client takes it (chunked encoding), polls
//                  sources that have nothing yet, and hands the connection back to the I/O
//                  thread when the body ends (keep-alive).
//
// Refusals carry the JSON error body of errors.h: 400 (malformed request), 411 (a body
// without Content-Length, or chunked), 413 (body over the limit), 431 (head over the limit),
// 408 (head or body too slow), 429 (too many connections from one address; answered at
// accept, then closed), 503 with Retry-After (over max_connections; answered at accept, then
// closed; a few at a time: beyond those a connection is closed at once).
//
// Threading: routes are registered before Start(); handlers run on several workers at once
// and must be thread-safe; a StreamSource runs on the stream thread only (one call at a time).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "api/http_message.h"
#include "base/status.h"

namespace rsl::api {

struct HttpServerOptions {
  int workers = 8;  // handlers are short store reads and engine calls
  // Below the usual 1024 open-file soft limit, leaving room for the store, logs and steps.
  int max_connections = 768;
  // One address may hold a third of the server: 100 log followers from one machine fit, and
  // two misbehaving clients still leave room for everyone else.
  int max_connections_per_client = 256;
  size_t max_head_bytes = 64 << 10;
  size_t max_body_bytes = 4 << 20;  // a workload YAML is a few KiB
  int max_requests_per_connection = 1000;
  // A whole request head within 10 s of the connection (or the previous answer), however
  // slowly it trickles: this also closes idle keep-alive connections.
  std::chrono::milliseconds head_timeout{10000};
  std::chrono::milliseconds body_timeout{30000};   // 4 MiB at ~140 KB/s
  std::chrono::milliseconds write_timeout{30000};  // no progress writing to a client
  std::chrono::milliseconds linger_timeout{5000};  // reading away a refused body
  std::chrono::milliseconds stream_poll{200};      // a source that said kWait
  size_t stream_piece_bytes = 256 << 10;           // per StreamSource::Next
};

//! Live counts, for tests and metrics.
struct HttpServerStats {
  int connections = 0;  //!< open sockets, every state
  int streams = 0;      //!< connections on the stream thread
  int busy_workers = 0;
};

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  //! Every request goes to this one handler, on a worker (the API's is its Router, which does
  //! the routing). Without one, every request is a JSON 404 naming its method and path.
  void SetHandler(HttpHandler handler);
  //! The handler without one: a JSON 404 (NOT_FOUND) naming the method and path.
  static void NotFound(const HttpRequest& req, HttpResponse& res);

  //! Binds host:port (0 = an ephemeral port) with SO_REUSEADDR only (never SO_REUSEPORT: a
  //! second server on the same port must fail). CONFLICT when the address is in use,
  //! IO_ERROR (with strerror) for any other failure.
  Status Listen(const std::string& host, int port);
  //! Starts the threads. Without Listen(), the server serves adopted connections only.
  void Start();
  //! Serves a connection accepted elsewhere (a TLS front end hands over the plain side of a
  //! socket pair): it is counted and bounded like an accepted one, under `peer` (the real
  //! client's address); its requests carry `client_cert` (the verified client certificate of
  //! mutual TLS, or null). Thread-safe; takes `fd` (closed at once when the server is not
  //! running).
  void Adopt(int fd, const std::string& peer,
             std::shared_ptr<const ClientCertificate> client_cert = nullptr);
  //! When set (before Start), every accepted socket goes to `hook` on the I/O thread instead
  //! of being served (a TLS front end takes it, and Adopts the plain side). `hook` must not
  //! block.
  void SetAcceptHook(std::function<void(int fd, const std::string& peer)> hook);
  //! Closes the listening socket and every connection (streams end), joins the threads.
  //! Idempotent.
  void Stop();

  int port() const { return port_; }
  HttpServerStats stats() const;

  struct Conn;

 private:
  struct Job {
    uint64_t conn_id;
    HttpRequest request;
  };
  struct Done {
    uint64_t conn_id;
    HttpResponse response;
  };

  void IoLoop();
  void StreamLoop();
  void WorkerLoop();
  void Dispatch(HttpRequest& request, HttpResponse& response);

  // I/O thread.
  void Accept();
  struct Adopted {
    int fd;
    std::string peer;
    std::shared_ptr<const ClientCertificate> client_cert;
  };
  void AddConnection(int fd, const std::string& peer,
                     std::shared_ptr<const ClientCertificate> client_cert = nullptr);
  void OnReadable(Conn* c);
  void ParseRequests(Conn* c);
  void StartResponse(Conn* c, HttpResponse response);
  void FlushIo(Conn* c);
  void Refuse(Conn* c, int status, const Error& error, int retry_after_sec = 0);
  void AfterResponse(Conn* c);
  void WatchIo(Conn* c, uint32_t events);
  void CloseIo(Conn* c);
  void Sweep();

  // Stream thread.
  void Pump(Conn* c, bool* ready);
  void CloseStream(Conn* c);

  void Forget(Conn* c);  // the per-client count; either thread
  void Wake(int fd);

  HttpServerOptions options_;
  HttpHandler handler_;
  std::function<void(int, const std::string&)> accept_hook_;
  int listen_fd_ = -1;
  int port_ = 0;
  int io_epoll_ = -1;
  int io_wake_ = -1;
  int stream_epoll_ = -1;
  int stream_wake_ = -1;
  std::thread io_thread_;
  std::thread stream_thread_;
  std::vector<std::thread> workers_;
  bool started_ = false;

  // Owned by the I/O thread / the stream thread respectively.
  std::map<uint64_t, std::unique_ptr<Conn>> io_conns_;
  std::map<uint64_t, std::unique_ptr<Conn>> stream_conns_;
  uint64_t next_id_ = 2;  // 0 and 1 are the listener and the wake-up eventfd
  std::chrono::steady_clock::time_point accept_paused_until_{};

  mutable std::mutex mu_;
  std::condition_variable jobs_cv_;
  bool stopping_ = false;                           // GUARDED_BY(mu_)
  std::deque<Job> jobs_;                            // GUARDED_BY(mu_)
  std::vector<Done> done_;                          // GUARDED_BY(mu_)
  std::vector<std::unique_ptr<Conn>> to_stream_;    // GUARDED_BY(mu_)
  std::vector<std::unique_ptr<Conn>> from_stream_;  // GUARDED_BY(mu_)
  std::vector<Adopted> adopted_;                    // GUARDED_BY(mu_)
  std::map<std::string, int> per_client_;           // GUARDED_BY(mu_)
  int connections_ = 0;                             // GUARDED_BY(mu_)
  int refusing_ = 0;      // connections over the limit being answered 503; GUARDED_BY(mu_)
  int streams_ = 0;       // GUARDED_BY(mu_)
  int busy_workers_ = 0;  // GUARDED_BY(mu_)
};

}  // namespace rsl::api
