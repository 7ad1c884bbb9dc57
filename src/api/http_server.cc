#include "api/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "api/errors.h"
#include "api/http_conn.h"
#include "api/http_parse.h"
#include "base/codes.h"
#include "base/strings.h"

namespace rsl::api {

namespace {

constexpr auto kAcceptPause = std::chrono::milliseconds(100);  // after EMFILE
constexpr size_t kReadBytes = 64 << 10;
// Connections over max_connections are answered 503 (and closed) while at most this many are
// being refused at once; beyond that they are closed at once, so a flood costs the server
// neither descriptors nor time.
constexpr int kMaxRefusing = 32;
constexpr int kBusyRetryAfterSec = 1;

std::string AddressOf(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, buf, sizeof(buf));
  } else if (ss.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

std::string ErrorBody(const Error& e) { return JsonText(ErrorToJson(e)); }

// "10 s", or "600 ms" below a second.
std::string Duration(std::chrono::milliseconds d) {
  return d.count() % 1000 == 0 ? std::to_string(d.count() / 1000) + " s"
                               : std::to_string(d.count()) + " ms";
}

}  // namespace

void HttpServer::NotFound(const HttpRequest& req, HttpResponse& res) {
  res.status = 404;
  res.SetContent(ErrorBody(Error(codes::kNotFound, "no route " + req.method + " " + req.path)
                               .Hint("see docs/api.md for the routes")),
                 "application/json");
}

HttpServer::HttpServer(HttpServerOptions options)
    : options_(std::move(options)), handler_(&HttpServer::NotFound) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::SetHandler(HttpHandler handler) { handler_ = std::move(handler); }

Status HttpServer::Listen(const std::string& host, int port) {
  std::string address =
      (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  int gai = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (gai != 0) {
    return Error(codes::kInvalidArgument,
                 "cannot resolve listen address " + Quote(address) + ": " + gai_strerror(gai))
        .Value(address)
        .Hint("use an IP address, e.g. 127.0.0.1:7070");
  }
  int err = 0;
  for (addrinfo* ai = found; ai != nullptr && listen_fd_ < 0; ai = ai->ai_next) {
    int fd =
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    // SO_REUSEADDR lets a restarted controller bind while old connections sit in TIME_WAIT;
    // it does not let two sockets listen on one port. SO_REUSEPORT would, so it is not set.
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      err = errno;
      ::close(fd);
      continue;
    }
    listen_fd_ = fd;
  }
  freeaddrinfo(found);
  if (listen_fd_ < 0) {
    if (err == EADDRINUSE) {
      return Error(codes::kConflict, "address " + address + " is already in use")
          .Value(address)
          .Hint(
              "another rsl-controller (or another program) listens there: stop it, or pick "
              "another --listen port (port 0 = any free port)");
    }
    return OsError(codes::kIoError, "cannot listen on", address, err);
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len);
  port_ = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                   : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return Status::Ok();
}

void HttpServer::Start() {
  io_epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  stream_epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  io_wake_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  stream_wake_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenId;
  if (listen_fd_ >= 0) ::epoll_ctl(io_epoll_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.u64 = kWakeId;
  ::epoll_ctl(io_epoll_, EPOLL_CTL_ADD, io_wake_, &ev);
  ::epoll_ctl(stream_epoll_, EPOLL_CTL_ADD, stream_wake_, &ev);
  started_ = true;
  io_thread_ = std::thread([this] { IoLoop(); });
  stream_thread_ = std::thread([this] { StreamLoop(); });
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

void HttpServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  jobs_cv_.notify_all();
  if (started_) {
    Wake(io_wake_);
    Wake(stream_wake_);
    io_thread_.join();
    stream_thread_.join();
    for (auto& w : workers_) w.join();
  }
  auto close_conn = [](Conn* c) {
    if (!c->closed) ::close(c->fd);
    c->closed = true;
  };
  for (auto& [id, c] : io_conns_) close_conn(c.get());
  for (auto& [id, c] : stream_conns_) close_conn(c.get());
  io_conns_.clear();
  stream_conns_.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& c : to_stream_) close_conn(c.get());
    for (auto& c : from_stream_) close_conn(c.get());
    to_stream_.clear();
    from_stream_.clear();
    for (auto& a : adopted_) ::close(a.fd);
    adopted_.clear();
    per_client_.clear();
    connections_ = 0;
    refusing_ = 0;
    streams_ = 0;
  }
  for (int* fd : {&listen_fd_, &io_epoll_, &io_wake_, &stream_epoll_, &stream_wake_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

HttpServerStats HttpServer::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {connections_, streams_, busy_workers_};
}

void HttpServer::Wake(int fd) {
  uint64_t one = 1;
  (void)!::write(fd, &one, sizeof(one));
}

void HttpServer::Forget(Conn* c) {
  std::lock_guard<std::mutex> lock(mu_);
  if (c->refusing) {
    --refusing_;
    return;
  }
  --connections_;
  if (c->phase == Phase::kStreaming) --streams_;
  if (c->counted) {
    auto it = per_client_.find(c->peer);
    if (it != per_client_.end() && --it->second <= 0) per_client_.erase(it);
  }
}

// --- workers ---------------------------------------------------------------------------------

void HttpServer::WorkerLoop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      jobs_cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      ++busy_workers_;
    }
    HttpResponse response;
    Dispatch(job.request, response);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --busy_workers_;
      done_.push_back({job.conn_id, std::move(response)});
    }
    Wake(io_wake_);
  }
}

void HttpServer::Dispatch(HttpRequest& request, HttpResponse& response) {
  try {
    handler_(request, response);
  } catch (const std::exception& e) {
    response = HttpResponse();
    response.status = 500;
    response.SetContent(
        ErrorBody(Error(codes::kInternal, std::string("unexpected failure: ") + e.what())),
        "application/json");
  }
}

// --- the I/O thread ----------------------------------------------------------------------------

void HttpServer::IoLoop() {
  epoll_event events[kMaxEvents];
  auto next_sweep = Clock::now();
  for (;;) {
    int n = ::epoll_wait(io_epoll_, events, kMaxEvents, kMaxWaitMs);
    std::vector<Done> done;
    std::vector<std::unique_ptr<Conn>> back;
    std::vector<Adopted> adopted;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      done.swap(done_);
      back.swap(from_stream_);
      adopted.swap(adopted_);
    }
    for (auto& a : adopted) AddConnection(a.fd, a.peer, std::move(a.client_cert));
    for (int i = 0; i < n; ++i) {
      uint64_t id = events[i].data.u64;
      if (id == kListenId) {
        Accept();
        continue;
      }
      if (id == kWakeId) {
        uint64_t count;
        (void)!::read(io_wake_, &count, sizeof(count));
        continue;
      }
      auto it = io_conns_.find(id);
      if (it == io_conns_.end() || it->second->closed) continue;
      Conn* c = it->second.get();
      if (c->phase == Phase::kWriting) {
        FlushIo(c);
      } else {
        OnReadable(c);
      }
    }
    for (auto& d : done) {
      auto it = io_conns_.find(d.conn_id);
      if (it != io_conns_.end() && !it->second->closed) {
        StartResponse(it->second.get(), std::move(d.response));
      }
    }
    for (auto& c : back) {
      Conn* raw = c.get();
      io_conns_[raw->id] = std::move(c);
      raw->phase = Phase::kWriting;
      AfterResponse(raw);
    }
    if (Clock::now() >= next_sweep) {
      Sweep();
      next_sweep = Clock::now() + std::chrono::milliseconds(kMaxWaitMs);
    }
    for (auto it = io_conns_.begin(); it != io_conns_.end();) {
      it = it->second->closed ? io_conns_.erase(it) : std::next(it);
    }
  }
}

void HttpServer::Accept() {
  for (;;) {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    int fd =
        ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: stop watching the listener for a moment rather than spin.
        ::epoll_ctl(io_epoll_, EPOLL_CTL_DEL, listen_fd_, nullptr);
        accept_paused_until_ = Clock::now() + kAcceptPause;
      }
      return;
    }
    int yes = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
    if (accept_hook_) {
      accept_hook_(fd, AddressOf(ss));
    } else {
      AddConnection(fd, AddressOf(ss));
    }
  }
}

void HttpServer::SetAcceptHook(std::function<void(int fd, const std::string& peer)> hook) {
  accept_hook_ = std::move(hook);
}

void HttpServer::Adopt(int fd, const std::string& peer,
                       std::shared_ptr<const ClientCertificate> client_cert) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_ && started_) {
      adopted_.push_back({fd, peer, std::move(client_cert)});
      fd = -1;
    }
  }
  if (fd >= 0) {
    ::close(fd);
    return;
  }
  Wake(io_wake_);
}

void HttpServer::AddConnection(int fd, const std::string& peer,
                               std::shared_ptr<const ClientCertificate> client_cert) {
  auto conn = std::make_unique<Conn>();
  Conn* c = conn.get();
  c->id = next_id_++;
  c->fd = fd;
  c->peer = peer;
  c->client_cert = std::move(client_cert);
  bool over_total = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    over_total = connections_ >= options_.max_connections;
    if (over_total && refusing_ < kMaxRefusing) {
      ++refusing_;
      c->refusing = true;
    }
    if (!over_total) {
      ++connections_;
      int& mine = per_client_[c->peer];
      if (mine < options_.max_connections_per_client) {
        ++mine;
        c->counted = true;
      } else if (mine == 0) {
        per_client_.erase(c->peer);
      }
    }
  }
  if (over_total && !c->refusing) {
    ::close(fd);
    return;
  }
  io_conns_[c->id] = std::move(conn);
  c->deadline = Clock::now() + options_.head_timeout;
  if (c->refusing) {
    Refuse(c, 503,
           Error(kTooManyRequests, "the controller is serving its limit of " +
                                       std::to_string(options_.max_connections) + " connections")
               .Hint("retry in a moment; close idle connections and log streams"),
           kBusyRetryAfterSec);
    return;
  }
  if (!c->counted) {
    Refuse(c, 429,
           Error(kTooManyRequests, "too many connections from " + c->peer + " (limit " +
                                       std::to_string(options_.max_connections_per_client) + ")")
               .Value(c->peer)
               .Hint("close idle connections and log streams, then retry"));
    return;
  }
  WatchIo(c, EPOLLIN);
}

void HttpServer::WatchIo(Conn* c, uint32_t events) {
  if (c->events == events) return;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = c->id;
  if (events == 0) {
    ::epoll_ctl(io_epoll_, EPOLL_CTL_DEL, c->fd, nullptr);
  } else {
    ::epoll_ctl(io_epoll_, c->events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c->fd, &ev);
  }
  c->events = events;
}

void HttpServer::OnReadable(Conn* c) {
  if (c->phase == Phase::kWorking || c->phase == Phase::kStreaming) return;
  // Read what is there, but no more than the current request can use: the rest waits in the
  // socket (level-triggered epoll comes back for it).
  size_t want = c->phase == Phase::kBody ? c->head_len + c->body_len : options_.max_head_bytes + 1;
  char buf[kReadBytes];
  for (;;) {
    if (c->phase != Phase::kLinger && c->in.size() >= want) break;
    ssize_t r = ::recv(c->fd, buf, sizeof(buf), 0);
    if (r > 0) {
      if (c->phase != Phase::kLinger) c->in.append(buf, static_cast<size_t>(r));
      continue;
    }
    if (r == 0) {
      c->peer_closed = true;
      break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    CloseIo(c);
    return;
  }
  if (c->phase == Phase::kLinger) {
    if (c->peer_closed) CloseIo(c);
    return;
  }
  ParseRequests(c);
}

void HttpServer::ParseRequests(Conn* c) {
  if (c->phase == Phase::kHead) {
    while (c->scanned == 0 && !c->in.empty() && (c->in[0] == '\r' || c->in[0] == '\n')) {
      c->in.erase(0, 1);  // empty lines before a request are allowed (RFC 9112 2.2)
    }
    size_t end = HeadEnd(c->in, c->scanned);
    if (end == std::string::npos || end > options_.max_head_bytes) {
      c->scanned = c->in.size() > 2 ? c->in.size() - 2 : 0;
      if (c->in.size() > options_.max_head_bytes) {
        Refuse(c, 431,
               Error(codes::kInvalidArgument,
                     "request head over " + std::to_string(options_.max_head_bytes >> 10) + " KiB")
                   .Hint("send fewer or shorter headers"));
      } else if (c->peer_closed) {
        CloseIo(c);
      }
      return;
    }
    c->request = HttpRequest();
    c->request.remote_addr = c->peer;
    c->request.client_cert = c->client_cert;
    RequestHead head =
        ParseHead(std::string_view(c->in).substr(0, end), options_.max_body_bytes, &c->request);
    c->keep_alive = head.keep_alive;
    if (head.refuse != 0) {
      Refuse(c, head.refuse, head.error);
      return;
    }
    c->head_len = end;
    c->body_len = head.body_len;
    c->scanned = 0;
    c->phase = Phase::kBody;
    c->deadline = Clock::now() + options_.body_timeout;
    if (head.expect_continue && c->in.size() < end + c->body_len) {
      static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      (void)!::send(c->fd, kContinue, sizeof(kContinue) - 1, MSG_NOSIGNAL);
    }
  }
  if (c->phase != Phase::kBody) return;
  if (c->in.size() < c->head_len + c->body_len) {
    if (c->peer_closed) CloseIo(c);
    return;
  }
  c->request.body = c->in.substr(c->head_len, c->body_len);
  c->in.erase(0, c->head_len + c->body_len);
  c->head_request = c->request.method == "HEAD";
  if (++c->requests >= options_.max_requests_per_connection || c->peer_closed) {
    c->keep_alive = false;
  }
  c->phase = Phase::kWorking;
  WatchIo(c, 0);
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back({c->id, std::move(c->request)});
  }
  jobs_cv_.notify_one();
  c->request = HttpRequest();
}

void HttpServer::StartResponse(Conn* c, HttpResponse response) {
  bool chunked = response.stream != nullptr;
  c->out = ResponseHead(response, c->keep_alive, chunked, response.body.size());
  c->out_off = 0;
  if (chunked && !c->head_request) {
    c->stream = std::move(response.stream);
    c->stream_done = false;
    c->next_pull = Clock::now();
    c->phase = Phase::kStreaming;
    auto node = io_conns_.extract(c->id);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++streams_;
      to_stream_.push_back(std::move(node.mapped()));
    }
    Wake(stream_wake_);
    return;
  }
  if (!c->head_request) c->out += response.body;
  c->phase = Phase::kWriting;
  c->deadline = Clock::now() + options_.write_timeout;
  FlushIo(c);
}

void HttpServer::FlushIo(Conn* c) {
  while (c->out_off < c->out.size()) {
    ssize_t w = ::send(c->fd, c->out.data() + c->out_off, c->out.size() - c->out_off, MSG_NOSIGNAL);
    if (w > 0) {
      c->out_off += static_cast<size_t>(w);
      c->deadline = Clock::now() + options_.write_timeout;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      WatchIo(c, EPOLLOUT);
      return;
    }
    CloseIo(c);
    return;
  }
  c->out.clear();
  c->out_off = 0;
  AfterResponse(c);
}

void HttpServer::Refuse(Conn* c, int status, const Error& error, int retry_after_sec) {
  HttpResponse r;
  r.status = status;
  if (retry_after_sec > 0) r.SetHeader("Retry-After", std::to_string(retry_after_sec));
  r.SetContent(ErrorBody(error), "application/json");
  c->keep_alive = false;
  c->linger = true;
  c->head_request = false;
  c->out = ResponseHead(r, false, false, r.body.size()) + r.body;
  c->out_off = 0;
  c->phase = Phase::kWriting;
  c->deadline = Clock::now() + options_.write_timeout;
  FlushIo(c);
}

void HttpServer::AfterResponse(Conn* c) {
  if (!c->keep_alive) {
    // Shut the write side and read until the client closes: closing with its bytes unread
    // would reset the connection and could destroy the answer before the client reads it.
    ::shutdown(c->fd, SHUT_WR);
    c->phase = Phase::kLinger;
    c->in.clear();
    c->deadline = Clock::now() + options_.linger_timeout;
    WatchIo(c, EPOLLIN);
    return;
  }
  c->phase = Phase::kHead;
  c->scanned = 0;
  c->deadline = Clock::now() + options_.head_timeout;
  WatchIo(c, EPOLLIN);
  if (!c->in.empty() || c->peer_closed) ParseRequests(c);  // a pipelined request
}

void HttpServer::CloseIo(Conn* c) {
  if (c->closed) return;
  ::close(c->fd);
  c->closed = true;
  Forget(c);
}

void HttpServer::Sweep() {
  auto now = Clock::now();
  if (accept_paused_until_ != Clock::time_point() && now >= accept_paused_until_) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kListenId;
    ::epoll_ctl(io_epoll_, EPOLL_CTL_ADD, listen_fd_, &ev);
    accept_paused_until_ = Clock::time_point();
  }
  for (auto& [id, conn] : io_conns_) {
    Conn* c = conn.get();
    if (c->closed || c->phase == Phase::kWorking || now < c->deadline) continue;
    if (c->phase == Phase::kHead && !c->in.empty()) {
      Refuse(c, 408,
             Error(codes::kInvalidArgument,
                   "request head not complete within " + Duration(options_.head_timeout))
                 .Hint("send the whole request at once"));
    } else if (c->phase == Phase::kBody) {
      Refuse(c, 408,
             Error(codes::kInvalidArgument,
                   "request body not complete within " + Duration(options_.body_timeout))
                 .Hint("send the whole request at once"));
    } else {
      CloseIo(c);  // idle, or a client that does not read its answer
    }
  }
}

}  // namespace rsl::api
