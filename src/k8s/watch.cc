#include "k8s/watch.h"

#include <chrono>
#include <thread>

#include "base/codes.h"

namespace rsl::k8s {

namespace {

Error Malformed(const std::string& why, std::string_view line) {
  return Error(codes::kK8sApiError, "malformed watch event: " + why)
      .Value(std::string(line.substr(0, 120)));
}

std::string NameOf(const nlohmann::json& object) {
  const auto& md = object.value("metadata", nlohmann::json::object());
  return md.is_object() ? md.value("name", std::string()) : std::string();
}

std::string RvOf(const nlohmann::json& object) {
  const auto& md = object.value("metadata", nlohmann::json::object());
  return md.is_object() ? md.value("resourceVersion", std::string()) : std::string();
}

}  // namespace

const char* Name(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
    case WatchEventType::kError:
      return "ERROR";
  }
  return "?";
}

Result<WatchEvent> ParseWatchLine(std::string_view line) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded()) return Malformed("not JSON", line);
  if (!j.is_object()) return Malformed("not a JSON object", line);
  auto type = j.find("type");
  if (type == j.end() || !type->is_string()) return Malformed("no type", line);
  auto object = j.find("object");
  if (object == j.end() || !object->is_object()) return Malformed("no object", line);
  WatchEvent e;
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "ADDED")
    e.type = WatchEventType::kAdded;
  else if (t == "MODIFIED")
    e.type = WatchEventType::kModified;
  else if (t == "DELETED")
    e.type = WatchEventType::kDeleted;
  else if (t == "BOOKMARK")
    e.type = WatchEventType::kBookmark;
  else if (t == "ERROR")
    e.type = WatchEventType::kError;
  else
    return Malformed("unknown type \"" + t + "\"", line);
  if (e.type != WatchEventType::kError && NameOf(*object).empty() &&
      e.type != WatchEventType::kBookmark) {
    return Malformed("object without metadata.name", line);
  }
  e.object = std::move(*object);
  return e;
}

bool LineSplitter::Feed(std::string_view data,
                        const std::function<bool(std::string_view)>& on_line) {
  partial_.append(data);
  size_t start = 0;
  bool go_on = true;
  for (size_t nl; go_on && (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string_view line(partial_.data() + start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) go_on = on_line(line);
  }
  partial_.erase(0, start);
  return go_on;
}

Informer::Informer(ApiClient* client, std::string collection, std::string label_selector,
                   Callback on_change)
    : client_(client),
      collection_(std::move(collection)),
      selector_(std::move(label_selector)),
      on_change_(std::move(on_change)) {}

std::map<std::string, nlohmann::json> Informer::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_;
}

std::string Informer::resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rv_;
}

void Informer::Apply(WatchEventType type, const nlohmann::json& object) {
  std::string name = NameOf(object);
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::string rv = RvOf(object);
    if (!rv.empty()) rv_ = rv;
    auto it = cache_.find(name);
    if (type == WatchEventType::kDeleted) {
      if (it == cache_.end()) return;
      cache_.erase(it);
    } else {
      // The same version twice (a resumed watch overlapping the last one): not a change.
      if (it != cache_.end() && RvOf(it->second) == rv) return;
      type = it == cache_.end() ? WatchEventType::kAdded : WatchEventType::kModified;
      cache_[name] = object;
    }
  }
  if (on_change_) on_change_({type, object});
}

Status Informer::List() {
  std::string path = collection_;
  if (!selector_.empty()) path += "?labelSelector=" + QueryEscape(selector_);
  ++stats_.lists;
  auto list = client_->Get(path);
  if (!list.ok()) return list.status();
  if (!list->is_object() || !(*list)["items"].is_array()) {
    return Error(codes::kK8sApiError, "GET " + path + ": not a List (no items)");
  }
  std::map<std::string, nlohmann::json> fresh;
  for (const auto& item : (*list)["items"]) {
    if (item.is_object() && !NameOf(item).empty()) fresh[NameOf(item)] = item;
  }
  // A relist: what disappeared meanwhile is reported DELETED, the rest ADDED or MODIFIED (and
  // nothing for objects whose version the cache already has).
  std::vector<nlohmann::json> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, obj] : cache_) {
      if (!fresh.count(name)) gone.push_back(obj);
    }
  }
  for (const auto& obj : gone) Apply(WatchEventType::kDeleted, obj);
  for (const auto& [name, obj] : fresh) Apply(WatchEventType::kModified, obj);
  std::lock_guard<std::mutex> lock(mu_);
  rv_ = (*list)["metadata"].is_object()
            ? (*list)["metadata"].value("resourceVersion", std::string())
            : std::string();
  synced_ = true;
  return Status::Ok();
}

Status Informer::Watch(const std::atomic<bool>* stop) {
  std::string path = collection_ + "?watch=1&allowWatchBookmarks=true&resourceVersion=" +
                     QueryEscape(resource_version()) +
                     "&timeoutSeconds=" + std::to_string(watch_timeout_s_);
  if (!selector_.empty()) path += "&labelSelector=" + QueryEscape(selector_);
  ++stats_.watches;
  LineSplitter lines;
  Status event_error;
  Status st = client_->Stream(
      path,
      [&](std::string_view data) {
        return lines.Feed(data, [&](std::string_view line) {
          auto e = ParseWatchLine(line);
          if (!e.ok()) {
            ++stats_.malformed;
            event_error = e.status();
            return false;
          }
          if (e->type == WatchEventType::kError) {
            event_error = StatusObjectError("watch " + collection_, e->object);
            return false;
          }
          if (e->type == WatchEventType::kBookmark) {
            std::string rv = RvOf(e->object);
            std::lock_guard<std::mutex> lock(mu_);
            if (!rv.empty()) rv_ = rv;
            return true;
          }
          Apply(e->type, e->object);
          return true;
        });
      },
      stop);
  if (!event_error.ok()) return event_error;
  return st;
}

Status Informer::Run(const std::atomic<bool>* stop, int max_consecutive_errors,
                     int64_t retry_backoff_ms) {
  RSL_RETURN_IF_ERROR(List());
  int errors = 0;
  while (!stop->load()) {
    Status st = Watch(stop);
    if (stop->load()) break;
    if (st.ok()) {
      errors = 0;  // the server ended the stream (timeoutSeconds): resume
      continue;
    }
    if (st.code() == codes::kK8sGone) {
      ++stats_.gone;
      st = List();
      if (st.ok()) {
        errors = 0;
        continue;
      }
    }
    if (++errors >= max_consecutive_errors) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(retry_backoff_ms));
  }
  return Status::Ok();
}

Status StreamPodLog(ApiClient* client, const std::string& ns, const std::string& pod,
                    const std::string& container, bool follow,
                    const std::function<bool(std::string_view)>& on_data,
                    const std::atomic<bool>* stop) {
  std::string path = "/api/v1/namespaces/" + ns + "/pods/" + pod + "/log";
  std::string sep = "?";
  if (!container.empty()) {
    path += sep + "container=" + QueryEscape(container);
    sep = "&";
  }
  if (follow) path += sep + "follow=true";
  return client->Stream(path, on_data, stop);
}

}  // namespace rsl::k8s
