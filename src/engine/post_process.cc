#include "engine/post_process.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "base/codes.h"
#include "base/http_client.h"
#include "base/strings.h"

namespace rsl::engine {
namespace {

constexpr char kPendingDir[] = "post-process";
constexpr char kPendingSuffix[] = ".json";
//! Connecting may take at most this share of a try (a dead host fails fast, not at timeout).
constexpr long kConnectTimeoutMs = 5'000;

// Answers worth another try: the receiver is overloaded, restarting or timed out.
bool Retryable(long status) { return status == 408 || status == 429 || status >= 500; }

// scheme://host[:port]/path: no user info and no query (either may carry a token).
std::string ShownUrl(const std::string& url) {
  std::string u = RedactUrl(url);
  size_t cut = u.find_first_of("?#");
  return cut == std::string::npos ? u : u.substr(0, cut);
}

}  // namespace

std::string Delivery::ToJson() const {
  nlohmann::json j;
  j["key"] = key;
  j["runId"] = run_id;
  j["namespace"] = namespace_;
  j["step"] = step;
  j["hook"] = hook;
  j["required"] = required;
  j["method"] = method;
  j["url"] = url;
  j["body"] = body;
  j["retries"] = retries;
  j["timeoutMs"] = timeout_ms;
  j["headers"] = nlohmann::json::array();
  for (const auto& h : headers) {
    nlohmann::json hj;
    hj["name"] = h.name;
    if (h.secret_name.empty()) {
      hj["value"] = h.value;
    } else {
      hj["secretRef"] = h.secret_name;
      hj["key"] = h.secret_key;
    }
    j["headers"].push_back(hj);
  }
  return j.dump();
}

Result<Delivery> Delivery::FromJson(const std::string& json) {
  auto j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) return Error(codes::kInternal, "a pending postProcess record is not JSON");
  try {
    Delivery d;
    d.key = j.at("key").get<std::string>();
    d.run_id = j.at("runId").get<std::string>();
    d.namespace_ = j.at("namespace").get<std::string>();
    d.step = j.at("step").get<std::string>();
    d.hook = j.at("hook").get<int>();
    d.required = j.at("required").get<bool>();
    d.method = j.at("method").get<std::string>();
    d.url = j.at("url").get<std::string>();
    d.body = j.at("body").get<std::string>();
    d.retries = j.at("retries").get<int64_t>();
    d.timeout_ms = j.at("timeoutMs").get<int64_t>();
    for (const auto& hj : j.at("headers")) {
      spec::HookHeader h;
      h.name = hj.at("name").get<std::string>();
      if (hj.contains("secretRef")) {
        h.secret_name = hj.at("secretRef").get<std::string>();
        h.secret_key = hj.at("key").get<std::string>();
      } else {
        h.value = hj.at("value").get<std::string>();
      }
      d.headers.push_back(std::move(h));
    }
    return d;
  } catch (const nlohmann::json::exception& e) {
    return Error(codes::kInternal,
                 std::string("a pending postProcess record is incomplete: ") + e.what());
  }
}

std::string Delivery::Describe() const {
  return "postProcess[" + std::to_string(hook) + "] " + method + " " + ShownUrl(url);
}

PostProcessSender::PostProcessSender(store::Store* store, Env* env, std::string state_dir,
                                     Done done)
    : store_(store),
      env_(env),
      dir_(state_dir.empty() ? "" : state_dir + "/" + kPendingDir),
      done_(std::move(done)) {}

PostProcessSender::~PostProcessSender() { Stop(); }

std::string PostProcessSender::PendingPath(const std::string& key) const {
  return dir_ + "/" + key + kPendingSuffix;
}

Status PostProcessSender::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = false;
  }
  if (!dir_.empty() && env_->IsDirectory(dir_)) {
    auto names = env_->ListDir(dir_);
    if (!names.ok()) return names.status();
    std::sort(names->begin(), names->end());
    for (const auto& name : *names) {
      if (!EndsWith(name, kPendingSuffix)) continue;  // a temporary file a crash left
      auto text = env_->ReadFile(dir_ + "/" + name);
      if (!text.ok()) continue;
      auto d = Delivery::FromJson(*text);
      if (!d.ok()) {
        fprintf(stderr, "rsl engine: dropping %s/%s: %s\n", dir_.c_str(), name.c_str(),
                d.error().message.c_str());
        (void)env_->RemoveAll(dir_ + "/" + name);
        continue;
      }
      Enqueue(std::move(*d));
    }
  }
  thread_ = std::thread([this] { Loop(); });
  started_ = true;
  return Status::Ok();
}

Status PostProcessSender::Persist(const Delivery& d) {
  if (dir_.empty()) return Status::Ok();
  RSL_RETURN_IF_ERROR(env_->MakeDirs(dir_));
  return env_->WriteFileAtomic(PendingPath(d.key), d.ToJson());
}

void PostProcessSender::Enqueue(Delivery d) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!keys_.insert(d.key).second) return;
    queue_.push_back(std::move(d));
  }
  cv_.notify_all();
}

bool PostProcessSender::Drain(int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] {
    return keys_.empty() || stopping_;
  }) && keys_.empty();
}

void PostProcessSender::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  queue_.clear();
  keys_.clear();
  started_ = false;
}

void PostProcessSender::Loop() {
  while (true) {
    Delivery d;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      d = std::move(queue_.front());
      queue_.pop_front();
    }
    DeliveryResult r = Send(d);
    bool stopped;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped = stopping_;
    }
    // Cut short by Stop: the pending file stays for the next engine.
    if (stopped && !r.ok && r.message.empty()) return;
    if (done_) done_(d, r);
    if (!d.required && !dir_.empty()) (void)env_->RemoveAll(PendingPath(d.key));
    {
      std::lock_guard<std::mutex> lock(mu_);
      keys_.erase(d.key);
    }
    cv_.notify_all();
  }
}

DeliveryResult PostProcessSender::Send(const Delivery& d) {
  DeliveryResult r;
  HttpRequest req;
  req.method = d.method;
  req.url = d.url;
  req.timeout_ms = long(d.timeout_ms);
  req.connect_timeout_ms = std::min<long>(kConnectTimeoutMs, long(d.timeout_ms));
  bool has_content_type = false;
  for (const auto& h : d.headers) {
    std::string value = h.value;
    if (!h.secret_name.empty()) {
      auto secret = store_->GetConfigMap(d.namespace_, h.secret_name, true);
      if (!secret.ok()) {
        r.message = "header " + h.name + ": secret " + Quote(h.secret_name) + " not found";
        return r;
      }
      auto it = secret->data.find(h.secret_key);
      if (it == secret->data.end()) {
        r.message = "header " + h.name + ": secret " + Quote(h.secret_name) + " has no key " +
                    Quote(h.secret_key);
        return r;
      }
      value = it->second;
    }
    if (ToLower(h.name) == "content-type") has_content_type = true;
    req.headers.push_back(h.name + ": " + value);
  }
  if (!has_content_type && !d.body.empty()) req.headers.push_back("Content-Type: application/json");
  req.headers.push_back("User-Agent: rsl-post-process");
  req.headers.push_back("Expect:");
  req.body = d.body;
  int64_t backoff = kHookBackoffMs;
  for (int64_t attempt = 1; attempt <= 1 + d.retries; ++attempt) {
    if (attempt > 1) {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, std::chrono::milliseconds(backoff), [this] { return stopping_; })) {
        r.message.clear();  // stopped: not a result
        return r;
      }
      backoff = std::min(backoff * 2, kHookMaxBackoffMs);
    }
    r.tries = int(attempt);
    std::string transport;
    auto resp = HttpSend(req, &transport);
    r.status = resp.ok() ? resp->status : 0;
    if (resp.ok() && resp->status >= 200 && resp->status < 300) {
      r.ok = true;
      r.message = "answered " + std::to_string(resp->status);
      return r;
    }
    r.message =
        resp.ok() ? "answered " + std::to_string(resp->status) : "cannot reach it: " + transport;
    if (resp.ok() && !Retryable(resp->status)) break;
  }
  return r;
}

}  // namespace rsl::engine
