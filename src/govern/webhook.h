// Webhook notifications: an HTTP POST of a JSON body, retried with backoff on connection
// errors and non-2xx answers (base/http_client: libcurl, http and https).
#pragma once

#include <cstdint>
#include <string>

#include "base/http_client.h"  // RedactUrl, for the callers that name the url
#include "base/status.h"

namespace rsl::govern {

//! Pause before retry n (1-based): kWebhookBackoffMs * 2^(n-1). Short: the policy thread
//! waits for it, and a receiver that is down for longer gets an event instead.
inline constexpr int64_t kWebhookBackoffMs = 200;
inline constexpr int64_t kWebhookTimeoutMs = 5000;

struct WebhookResult {
  int attempts = 0;
  long http_status = 0;  //!< of the last attempt (0 when it did not connect)
};

//! POSTs `body` (Content-Type: application/json) to `url`, up to 1 + `retries` times.
//! Errors: IO_ERROR naming the url (without credentials), the last status or curl error.
Status PostJson(const std::string& url, const std::string& body, int retries,
                WebhookResult* result = nullptr);

}  // namespace rsl::govern
