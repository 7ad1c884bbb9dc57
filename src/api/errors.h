// How errors travel over HTTP: a JSON body `{"code", "message", "details": {...}}` with the
// HTTP status that matches the code (Kubernetes' conventions: 401, 403, 404, 409, 422 ...).
// The client turns the body back into Errors, so `seedctl` prints the server's errors exactly
// as a local command would, with the code on the last line.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "base/codes.h"
#include "base/status.h"

namespace rsl::api {

//! A client over its connection limit (HTTP 429); defined with the others in base/codes.h.
using codes::kTooManyRequests;

//! HTTP status for a stable error code: UNAUTHENTICATED 401, FORBIDDEN 403, NOT_FOUND 404,
//! CONFLICT 409, TOO_MANY_REQUESTS 429, INVALID_ARGUMENT / SPEC_* / EXPRESSION_INVALID 400,
//! INTERNAL / IO_ERROR 500, every other (admission) code 422 Unprocessable Entity.
int HttpStatusFor(const std::string& code);

//! `{"code", "message", "details": {"path", "value", "hint", "position", "errors": [...]}}`:
//! the first error at the top, every error (in order) in details.errors.
nlohmann::json ErrorsToJson(const Errors& errors);
nlohmann::json ErrorToJson(const Error& error);
//! `j` as JSON text that never throws: a string that is not valid UTF-8 (a request's path or
//! name echoed in a message) has its bad bytes replaced by U+FFFD. Every answer body goes
//! through it (nlohmann's dump() throws on such strings).
std::string JsonText(const nlohmann::json& j);

//! The inverse of ErrorsToJson; a body that is not such JSON becomes one error carrying
//! `http_status` and the start of the body (INVALID_ARGUMENT for 411 and 413, whose meaning
//! the status alone tells, e.g. from a proxy in front; INTERNAL otherwise).
Errors ErrorsFromJson(const std::string& body, int http_status);

}  // namespace rsl::api
