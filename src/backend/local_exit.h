// The local backend's attempts whose supervisor is gone (killed, crashed): their exit record if
// one was written, else kNodeLost, and the processes they left running (local_exit.cc).
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"

namespace rsl::backend {

// Every step process carries "<supervisor socket name>/<attempt id>" in this variable
// (LaunchLine adds it): unique to the state directory and the attempt, so a backend never
// takes another state directory's step (tests, users) with the same attempt id for its own.
constexpr std::string_view kMarkerVar = "RSL_SUPERVISED_ATTEMPT=";

//! The marker's value: "<supervisor socket name>/<attempt id>".
std::string Marker(const std::string& socket_name, const std::string& attempt_id);

//! An attempt reported lost: its supervisor is gone and left no exit record.
AttemptExit Lost(const std::string& attempt_id);

//! SIGKILLs every process whose environment carries one of `keys` (Marker()); how many.
int KillLeftovers(const std::set<std::string>& keys);

//! Kills, until a pass finds none, what the attempts in `exits` reported lost left running.
void KillLeftoversOfLost(const std::string& socket_name, const std::vector<AttemptExit>& exits);

//! The exit file (or journal record) of the attempt if there is a complete one, else Lost().
AttemptExit FromExitFile(const std::string& attempt_id, const std::string& exit_file);

}  // namespace rsl::backend
