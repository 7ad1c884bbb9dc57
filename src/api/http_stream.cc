// The HTTP server's stream thread (http_server.h): writes long-lived responses piece by piece
// as clients take them, and hands each connection back to the I/O thread when its body ends.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "api/http_conn.h"
#include "api/http_server.h"

namespace rsl::api {

namespace {

constexpr int kPiecesPerTurn = 4;  // a fast stream yields to the others after this many

}  // namespace

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
