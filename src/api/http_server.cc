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
#include "base/codes.h"
#include "base/strings.h"

namespace rsl::api {

using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kListenId = 0;  // epoll data of the listening socket
constexpr uint64_t kWakeId = 1;    // ... of the eventfd that wakes a loop
constexpr int kMaxEvents = 256;
constexpr int kMaxWaitMs = 200;  // deadlines are checked at least this often
constexpr auto kAcceptPause = std::chrono::milliseconds(100);  // after EMFILE
constexpr size_t kReadBytes = 64 << 10;
constexpr int kPiecesPerTurn = 4;  // a fast stream yields to the others after this many

enum class Phase {
  kHead,       // waiting for (the rest of) a request head
  kBody,       // head parsed, reading Content-Length bytes
  kWorking,    // a worker runs the handler; the socket is not watched
  kWriting,    // writing a plain response
  kStreaming,  // on the stream thread
  kLinger,     // answer written and write side shut: reading the client's bytes away
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int hi = HexValue(s[i + 1]), lo = HexValue(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += plus_is_space && s[i] == '+' ? ' ' : s[i];
  }
  return out;
}

void ParseQuery(std::string_view query, std::multimap<std::string, std::string>* params) {
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string key = PercentDecode(pair.substr(0, eq), true);
    std::string value =
        eq == std::string_view::npos ? std::string() : PercentDecode(pair.substr(eq + 1), true);
    params->emplace(std::move(key), std::move(value));
  }
}

// Index just past the empty line that ends a request head (CRLF or bare LF line ends), or
// npos. `from` is where the previous search stopped, so a trickled head is scanned once.
size_t HeadEnd(const std::string& in, size_t from) {
  size_t pos = from;
  while ((pos = in.find('\n', pos)) != std::string::npos) {
    ++pos;
    if (pos < in.size() && in[pos] == '\n') return pos + 1;
    if (pos + 1 < in.size() && in[pos] == '\r' && in[pos + 1] == '\n') return pos + 2;
  }
  return std::string::npos;
}

std::string AddressOf(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, buf, sizeof(buf));
  } else if (ss.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

std::string ErrorBody(const Error& e) { return ErrorToJson(e).dump(); }

// "10 s", or "600 ms" below a second.
std::string Duration(std::chrono::milliseconds d) {
  return d.count() % 1000 == 0 ? std::to_string(d.count() / 1000) + " s"
                               : std::to_string(d.count()) + " ms";
}

std::string ResponseHead(const HttpResponse& r, bool keep_alive, bool chunked, size_t length) {
  std::string h = "HTTP/1.1 " + std::to_string(r.status) + " " + HttpReason(r.status) + "\r\n";
  if (!r.content_type.empty()) h += "Content-Type: " + r.content_type + "\r\n";
  for (const auto& [name, value] : r.headers) h += name + ": " + value + "\r\n";
  h += chunked ? std::string("Transfer-Encoding: chunked\r\n")
               : "Content-Length: " + std::to_string(length) + "\r\n";
  h += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return h;
}

std::string ChunkHeader(size_t size) {
  char buf[24];
  snprintf(buf, sizeof(buf), "%zx\r\n", size);
  return buf;
}

// What a request head says, or the refusal (status and error) when it cannot be served.
struct Head {
  int refuse = 0;
  Error error;
  bool keep_alive = true;
  bool expect_continue = false;
  size_t body_len = 0;
};

Head ParseHead(std::string_view text, const HttpServerOptions& options, HttpRequest* r) {
  Head h;
  auto bad = [&](int status, Error e) {
    h.refuse = status;
    h.error = std::move(e);
    return h;
  };
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;
    lines.push_back(line);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  }
  auto malformed = [&](const std::string& what) {
    return bad(400, Error(codes::kInvalidArgument, "malformed HTTP request: " + what)
                        .Hint("send HTTP/1.1 requests (see docs/api.md)"));
  };
  if (lines.empty()) return malformed("no request line");
  std::string_view first = lines[0];
  size_t sp1 = first.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : first.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return malformed("bad request line");
  r->method = std::string(first.substr(0, sp1));
  r->target = std::string(first.substr(sp1 + 1, sp2 - sp1 - 1));
  std::string version(first.substr(sp2 + 1));
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return malformed("bad version");
  if (r->target.empty() || r->target[0] != '/') return malformed("bad target");
  size_t q = r->target.find('?');
  r->path = PercentDecode(std::string_view(r->target).substr(0, q), false);
  if (q != std::string::npos) ParseQuery(std::string_view(r->target).substr(q + 1), &r->params);
  for (size_t i = 1; i < lines.size(); ++i) {
    size_t colon = lines[i].find(':');
    if (colon == std::string_view::npos || colon == 0 || lines[i][0] == ' ' ||
        lines[i][0] == '\t') {
      return malformed("bad header line");
    }
    r->headers.emplace_back(Lower(std::string(lines[i].substr(0, colon))),
                            std::string(Trim(lines[i].substr(colon + 1))));
  }
  std::string connection = Lower(r->Header("connection"));
  h.keep_alive = version == "HTTP/1.1" ? connection.find("close") == std::string::npos
                                       : connection.find("keep-alive") != std::string::npos;
  h.expect_continue = Lower(r->Header("expect")) == "100-continue";
  std::string limit = std::to_string(options.max_body_bytes >> 20) + " MiB";
  if (!r->Header("transfer-encoding").empty()) {
    return bad(411,
               Error(codes::kInvalidArgument, "chunked request bodies are not accepted")
                   .Hint("send the body with a Content-Length header (at most " + limit + ")"));
  }
  std::string length;
  for (const auto& [name, value] : r->headers) {
    if (name != "content-length") continue;
    if (!length.empty() && length != value) return malformed("conflicting Content-Length");
    length = value;
  }
  if (length.empty()) {
    if (r->method == "POST" || r->method == "PUT" || r->method == "PATCH") {
      return bad(411,
                 Error(codes::kInvalidArgument, r->method + " without Content-Length")
                     .Hint("send the body with a Content-Length header (at most " + limit + ")"));
    }
    return h;
  }
  if (length.size() > 18 || length.find_first_not_of("0123456789") != std::string::npos) {
    return malformed("bad Content-Length");
  }
  h.body_len = std::stoull(length);
  if (h.body_len > options.max_body_bytes) {
    return bad(413, Error(codes::kInvalidArgument,
                          "request body of " + length + " bytes is over the limit of " + limit)
                        .Value(length)
                        .Hint("a workload YAML is a few KiB: move data out of the spec (data.input "
                              "URIs, configmaps)"));
  }
  return h;
}

}  // namespace

struct HttpServer::Conn {
  uint64_t id = 0;
  int fd = -1;
  std::string peer;
  bool counted = false;  // holds a place in per_client_ (refused connections do not)
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

std::string HttpRequest::Param(const std::string& key) const {
  auto it = params.find(key);
  return it == params.end() ? std::string() : it->second;
}

std::string HttpRequest::Header(const std::string& name) const {
  std::string lower = Lower(name);
  for (const auto& [k, v] : headers) {
    if (k == lower) return v;
  }
  return "";
}

void HttpResponse::SetHeader(const std::string& name, const std::string& value) {
  headers.emplace_back(name, value);
}

void HttpResponse::SetContent(std::string text, const std::string& type) {
  body = std::move(text);
  content_type = type;
}

void HttpResponse::SetStream(const std::string& type, std::shared_ptr<StreamSource> source) {
  content_type = type;
  stream = std::move(source);
}

const char* HttpReason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

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
  ::epoll_ctl(io_epoll_, EPOLL_CTL_ADD, listen_fd_, &ev);
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
    per_client_.clear();
    connections_ = 0;
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
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      done.swap(done_);
      back.swap(from_stream_);
    }
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
    auto conn = std::make_unique<Conn>();
    Conn* c = conn.get();
    c->id = next_id_++;
    c->fd = fd;
    c->peer = AddressOf(ss);
    bool over_total = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      over_total = connections_ >= options_.max_connections;
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
    if (over_total) {
      ::close(fd);
      continue;
    }
    io_conns_[c->id] = std::move(conn);
    c->deadline = Clock::now() + options_.head_timeout;
    if (!c->counted) {
      Refuse(c, 429,
             Error(kTooManyRequests, "too many connections from " + c->peer + " (limit " +
                                         std::to_string(options_.max_connections_per_client) + ")")
                 .Value(c->peer)
                 .Hint("close idle connections and log streams, then retry"));
      continue;
    }
    WatchIo(c, EPOLLIN);
  }
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
    Head head = ParseHead(std::string_view(c->in).substr(0, end), options_, &c->request);
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

void HttpServer::Refuse(Conn* c, int status, const Error& error) {
  HttpResponse r;
  r.status = status;
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

// --- the stream thread -------------------------------------------------------------------------

void HttpServer::StreamLoop() {
  epoll_event events[kMaxEvents];
  bool ready = false;
  for (;;) {
    auto now = Clock::now();
    int timeout = kMaxWaitMs;
    if (ready) {
      timeout = 0;
    } else {
      for (const auto& [id, c] : stream_conns_) {
        if (c->out.empty() && !c->stream_done) {
          auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(c->next_pull - now);
          timeout = std::clamp(static_cast<int>(ms.count()), 0, timeout);
        }
      }
    }
    int n = ::epoll_wait(stream_epoll_, events, kMaxEvents, timeout);
    std::vector<std::unique_ptr<Conn>> adopted;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      adopted.swap(to_stream_);
    }
    for (auto& c : adopted) {
      epoll_event ev{};
      ev.events = EPOLLRDHUP;
      ev.data.u64 = c->id;
      ::epoll_ctl(stream_epoll_, EPOLL_CTL_ADD, c->fd, &ev);
      c->events = EPOLLRDHUP;
      c->deadline = Clock::now() + options_.write_timeout;
      stream_conns_[c->id] = std::move(c);
    }
    for (int i = 0; i < n; ++i) {
      uint64_t id = events[i].data.u64;
      if (id == kWakeId) {
        uint64_t count;
        (void)!::read(stream_wake_, &count, sizeof(count));
        continue;
      }
      auto it = stream_conns_.find(id);
      if (it == stream_conns_.end()) continue;
      // The client went away (or half-closed: a follower never sends again before the end).
      if (events[i].events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) CloseStream(it->second.get());
    }
    ready = false;
    for (auto it = stream_conns_.begin(); it != stream_conns_.end();) {
      Conn* c = it->second.get();
      if (!c->closed) Pump(c, &ready);
      if (c->closed) {
        it = stream_conns_.erase(it);
      } else if (c->phase != Phase::kStreaming) {  // the body ended: back to the I/O thread
        ::epoll_ctl(stream_epoll_, EPOLL_CTL_DEL, c->fd, nullptr);
        c->events = 0;
        c->stream.reset();
        {
          std::lock_guard<std::mutex> lock(mu_);
          --streams_;
          from_stream_.push_back(std::move(it->second));
        }
        Wake(io_wake_);
        it = stream_conns_.erase(it);
      } else {
        ++it;
      }
    }
  }
}

void HttpServer::Pump(Conn* c, bool* ready) {
  auto watch = [&](uint32_t events) {
    if (c->events == events) return;
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = c->id;
    ::epoll_ctl(stream_epoll_, EPOLL_CTL_MOD, c->fd, &ev);
    c->events = events;
  };
  for (int pieces = 0;;) {
    while (c->out_off < c->out.size()) {
      ssize_t w =
          ::send(c->fd, c->out.data() + c->out_off, c->out.size() - c->out_off, MSG_NOSIGNAL);
      if (w > 0) {
        c->out_off += static_cast<size_t>(w);
        c->deadline = Clock::now() + options_.write_timeout;
        continue;
      }
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && Clock::now() < c->deadline) {
        watch(EPOLLRDHUP | EPOLLOUT);  // the client has not taken the last piece yet
        return;
      }
      CloseStream(c);
      return;
    }
    c->out.clear();
    c->out_off = 0;
    watch(EPOLLRDHUP);
    if (c->stream_done) {
      c->phase = Phase::kWriting;  // StreamLoop hands it back
      return;
    }
    auto now = Clock::now();
    if (now < c->next_pull) return;
    if (pieces++ == kPiecesPerTurn) {
      *ready = true;
      return;
    }
    std::string piece;
    StreamSource::State state;
    try {
      state = c->stream->Next(options_.stream_piece_bytes, &piece);
    } catch (const std::exception&) {
      CloseStream(c);  // a broken source: the client sees the body cut short
      return;
    }
    if (!piece.empty()) c->out = ChunkHeader(piece.size()) + piece + "\r\n";
    if (state == StreamSource::State::kDone) {
      c->out += "0\r\n\r\n";
      c->stream_done = true;
    } else if (state == StreamSource::State::kWait) {
      c->next_pull = now + options_.stream_poll;
    }
  }
}

void HttpServer::CloseStream(Conn* c) {
  if (c->closed) return;
  ::close(c->fd);
  Forget(c);
  c->closed = true;
}

}  // namespace rsl::api
