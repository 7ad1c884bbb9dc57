// Reading server-sent events (text/event-stream) on the client side: seedctl's `--watch`
// commands read the controller's watch streams (events_stream.h) with it.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace rsl::api {

struct SseMessage {
  std::string type = "message";  //!< the `event:` field
  std::string data;              //!< the `data:` lines, joined by '\n'
};

//! Splits a stream, fed in pieces of any size, into events (blank-line separated blocks).
//! Comment lines (": keep-alive") and unknown fields are skipped; a block without data is
//! not an event (as in the HTML standard).
class SseParser {
 public:
  //! The events completed by `piece`, in order.
  std::vector<SseMessage> Feed(std::string_view piece);

 private:
  std::string buffer_;
};

//! Merges a workload stream's event into `workload` (an AIWorkload object): `workload`
//! replaces it, `status` replaces its status but keeps `status.steps`, `step` replaces the
//! step of that name (or adds it). Other events leave it as it is.
void ApplyWatchEvent(const std::string& type, const nlohmann::json& data, nlohmann::json* workload);

}  // namespace rsl::api
