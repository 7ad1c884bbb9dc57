#include "govern/webhook.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/codes.h"
#include "base/http_client.h"

namespace rsl::govern {

Status PostJson(const std::string& url, const std::string& body, int retries,
                WebhookResult* result) {
  HttpRequest req;
  req.method = "POST";
  req.url = url;
  req.headers = {"Content-Type: application/json", "User-Agent: rsl-govern/0.1"};
  req.body = body;
  req.timeout_ms = kWebhookTimeoutMs;
  WebhookResult r;
  std::string last_error;
  for (int attempt = 1; attempt <= 1 + std::max(0, retries); ++attempt) {
    if (attempt > 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(kWebhookBackoffMs << (attempt - 2)));
    }
    r.attempts = attempt;
    std::string curl_error;
    Result<HttpResponse> resp = HttpSend(req, &curl_error);
    r.http_status = resp.ok() ? resp->status : 0;
    if (resp.ok() && resp->status >= 200 && resp->status < 300) {
      if (result) *result = r;
      return Status::Ok();
    }
    last_error = resp.ok() ? "HTTP " + std::to_string(resp->status) : curl_error;
  }
  if (result) *result = r;
  return Error(codes::kIoError, "webhook POST to " + RedactUrl(url) + " failed after " +
                                    std::to_string(r.attempts) + " attempt(s): " + last_error)
      .Value(RedactUrl(url))
      .Hint("check that the receiver is up and answers 2xx");
}

}  // namespace rsl::govern
