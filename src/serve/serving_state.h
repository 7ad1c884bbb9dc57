// What a replica set keeps on disk so that a controller started after one that died can
// adopt it: the HAProxy it runs behind (pid, directory, socket, port) and each replica
// (index, generation, port), beside the serving attempt's own files. Pure: text in, text
// out; the set writes it (atomically) whenever it changes and removes it when it ends.
//
// Also the one place that derives a replica's LaunchSpec from the serving attempt's, so that
// a launch and a later adoption name the same attempt, files and port.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "base/status.h"

namespace rsl::serve {

struct ReplicaRecord {
  int index = 0;
  int generation = 0;  //!< of the process running now (its attempt id ends r<index>-<gen>)
  int port = 0;        //!< 0: chosen on its node, not known yet
  std::string node;    //!< where it runs ("" = unknown or this host)
  std::string host;    //!< the address it listens on
  int restarts = 0;
  bool retiring = false;  //!< draining: scaled down or superseded, not restarted
};

struct SetRecord {
  int64_t proxy_pid = 0;
  std::string proxy_dir;  //!< holds haproxy.cfg (HaproxyProcess::Adopt checks its cmdline)
  std::string socket;     //!< the runtime API
  int port = 0;           //!< the endpoint's
  std::string endpoint;   //!< http://host:port
  std::string server_prefix;
  int desired = 0;
  int next_index = 0;
  bool serving_ready = false;
  int64_t started_ms = 0;     //!< wall clock: which of two sets of one service is the newer
  std::string superseded_by;  //!< set once a newer version took over: it only drains
  std::vector<ReplicaRecord> replicas;
};

std::string SetRecordToJson(const SetRecord& record);
//! Errors: INTERNAL (not a record this code wrote).
Result<SetRecord> SetRecordFromJson(const std::string& text);

//! Where the set of serving attempt `spec` keeps its record: <exit_file>.serving.json.
std::string SetRecordPath(const backend::LaunchSpec& spec);

//! The HAProxy server-name prefix of the serving attempt: "<date>_<run hex>.<attempt>-"
//! (unique across the versions sharing one frontend; HAProxy names allow [A-Za-z0-9_.:-]).
//! A set adopted from its record keeps the prefix the record names (SetRecord::server_prefix:
//! sets started before the date was part of it are "<run hex>.<attempt>-").
std::string ServerPrefix(const backend::LaunchSpec& spec);

//! Replica `index`, generation `generation`, listening on `port`, of serving attempt
//! `parent`: attempt id <parent>/r<index>-<gen>, its own workdir, log and exit record
//! (<prefix>.r<index>-<gen>.log/.exit), RSL_PORT, RSL_REPLICA, RSL_METRICS_FILE and
//! RSL_PROGRESS_FILE; no serving settings and no timeout.
backend::LaunchSpec ReplicaLaunch(const backend::LaunchSpec& parent, int index, int generation,
                                  int port);

}  // namespace rsl::serve
