#include "api/events_stream.h"

#include "api/errors.h"
#include "spec/phase.h"

namespace rsl::api {

namespace {

using Clock = std::chrono::steady_clock;

constexpr char kKeepAlive[] = ": keep-alive\n\n";
// The earliest time of the next read: `interval` after the last one began, or `factor` times
// its length after it ended.
Clock::time_point NextRead(Clock::time_point start, std::chrono::milliseconds interval,
                           int factor) {
  auto now = Clock::now();
  return std::max(start + interval, now + (now - start) * factor);
}

int64_t SeqOf(const Json& event) { return event.value("seq", int64_t{0}); }

}  // namespace

Result<Json> Service::EventsSince(const std::string& id, int64_t after_seq) {
  auto all = Events(id);
  if (!all.ok()) return all;
  Json items = Json::array();
  for (const auto& e : all->value("items", Json::array())) {
    if (SeqOf(e) > after_seq) items.push_back(e);
  }
  (*all)["items"] = std::move(items);
  return all;
}

Result<Json> Service::LastEvents(const std::string& id, int64_t limit) {
  auto all = Events(id);
  if (!all.ok()) return all;
  Json& items = (*all)["items"];
  if (limit > 0 && items.is_array() && items.size() > static_cast<size_t>(limit)) {
    items.erase(items.begin(), items.end() - limit);
  }
  return all;
}

Result<std::string> Service::NamespaceOf(const std::string& id) {
  auto w = GetWorkload(id);
  if (!w.ok()) return w.error();
  return (*w)["metadata"].value("namespace", std::string());
}

std::string SseEvent(const std::string& type, const Json& data) {
  return "event: " + type + "\ndata: " + data.dump(-1, ' ', false, Json::error_handler_t::replace) +
         "\n\n";
}

bool IsTerminalPhaseName(const std::string& phase) {
  auto p = spec::ParseRunPhase(phase);
  return p.ok() && spec::IsTerminal(*p);
}

// --- one workload ----------------------------------------------------------------------------

WorkloadWatch::WorkloadWatch(Service* service, std::string id,
                             std::vector<std::unique_ptr<StepLog>> logs, WatchOptions options)
    : service_(service), id_(std::move(id)), logs_(std::move(logs)), options_(options) {}

void WorkloadWatch::NewEvents(std::string* out) {
  // At the start only the latest events, read as such (a 100,000-step run has 300,000).
  auto events = started_ ? service_->EventsSince(id_, last_event_seq_)
                         : service_->LastEvents(id_, static_cast<int64_t>(options_.initial_events));
  if (!events.ok()) return;
  for (const auto& item : (*events)["items"]) {
    last_event_seq_ = std::max(last_event_seq_, SeqOf(item));
    *out += SseEvent("event", item);
  }
}

bool WorkloadWatch::Reread(std::string* out) {
  auto w = service_->GetWorkload(id_);
  if (!w.ok()) {
    *out += SseEvent("error", {{"code", w.error().code}, {"message", w.error().message}});
    return false;
  }
  Json status = (*w)["status"];
  Json steps = status.contains("steps") ? status["steps"] : Json::array();
  status.erase("steps");
  phase_ = status.value("phase", std::string());
  terminal_ = IsTerminalPhaseName(phase_);
  if (!started_) {
    *out += SseEvent("workload", *w);
  } else {
    for (const auto& st : steps) {
      std::string name = st.value("name", std::string());
      std::string dumped = JsonText(st);
      std::string& before = steps_[name];
      if (before != dumped) *out += SseEvent("step", st);
    }
    std::string dumped = JsonText(status);
    if (dumped != status_) *out += SseEvent("status", status);
  }
  status_ = JsonText(status);
  for (const auto& st : steps) steps_[st.value("name", std::string())] = JsonText(st);
  NewEvents(out);
  return true;
}

StreamSource::State WorkloadWatch::FollowLog(size_t max_bytes, std::string* out) {
  while (log_index_ < logs_.size()) {
    StepLog& log = *logs_[log_index_];
    auto chunk = log.Next(static_cast<int64_t>(max_bytes));
    if (!chunk.ok()) {
      *out += SseEvent("error", {{"code", chunk.error().code}, {"message", chunk.error().message}});
      log_index_ = logs_.size();  // the logs end here; the run's events go on
      return State::kWait;
    }
    if (!chunk->data.empty())
      *out += SseEvent("log", {{"step", log.step()}, {"text", chunk->data}});
    if (!chunk->finished) return chunk->data.empty() ? State::kWait : State::kMore;
    *out += SseEvent("logEnd", {{"step", log.step()}});
    logs_[log_index_++].reset();  // closes its file
    if (out->size() >= max_bytes) return State::kMore;
  }
  return State::kWait;
}

StreamSource::State WorkloadWatch::Next(size_t max_bytes, std::string* out) {
  auto now = Clock::now();
  if (!started_ || now >= next_poll_) {
    next_poll_ = now + options_.poll;
    int64_t change = service_->ChangeSeq();
    if (!started_ || change < 0 || change != seen_change_ || (!terminal_ && now >= next_refresh_)) {
      seen_change_ = change;
      if (!Reread(out)) return State::kDone;  // gone: nothing more will come
      started_ = true;
      next_poll_ = NextRead(now, options_.poll, options_.slow_read_factor);
      next_refresh_ = NextRead(now, options_.refresh, options_.slow_read_factor);
    }
  }
  if (log_index_ < logs_.size() && FollowLog(max_bytes, out) == State::kMore) {
    last_write_ = now;
    return State::kMore;
  }
  if (terminal_ && log_index_ == logs_.size()) {
    *out += SseEvent("end", {{"phase", phase_}});
    return State::kDone;
  }
  if (!out->empty()) {
    last_write_ = now;
  } else if (now - last_write_ >= options_.keep_alive) {
    *out += kKeepAlive;
    last_write_ = now;
  }
  return State::kWait;
}

// --- the list ----------------------------------------------------------------------------------

WorkloadListWatch::WorkloadListWatch(Service* service, std::vector<std::string> namespaces,
                                     std::string name, WatchOptions options)
    : service_(service),
      namespaces_(std::move(namespaces)),
      name_(std::move(name)),
      options_(options) {}

StreamSource::State WorkloadListWatch::Next(size_t, std::string* out) {
  auto now = Clock::now();
  if (!started_ || now >= next_poll_) {
    next_poll_ = now + options_.poll;
    int64_t change = service_->ChangeSeq();
    // Summaries hold no sampled usage: a change always comes with an event.
    if (!started_ || change < 0 || change != seen_change_) {
      seen_change_ = change;
      WorkloadListQuery window;
      window.namespaces = namespaces_;
      window.name = name_;
      window.limit = static_cast<int64_t>(options_.list_window);
      auto list = service_->ListWorkloadsPage(window);
      if (!list.ok()) {
        *out += SseEvent("error", {{"code", list.error().code}, {"message", list.error().message}});
        return State::kDone;
      }
      std::map<std::string, std::string> now_items;
      for (const auto& item : list->value("items", Json::array())) {
        std::string id = item["metadata"].value("id", std::string());
        std::string dumped = JsonText(item);
        auto it = items_.find(id);
        if (started_ && (it == items_.end() || it->second != dumped)) {
          *out += SseEvent("workload", item);
        }
        now_items[id] = std::move(dumped);
      }
      items_ = std::move(now_items);
      if (!started_) *out += SseEvent("ready", {{"count", items_.size()}});
      started_ = true;
      next_poll_ = NextRead(now, options_.poll, options_.slow_read_factor);
    }
  }
  if (!out->empty()) {
    last_write_ = now;
  } else if (now - last_write_ >= options_.keep_alive) {
    *out += kKeepAlive;
    last_write_ = now;
  }
  return State::kWait;
}

}  // namespace rsl::api
