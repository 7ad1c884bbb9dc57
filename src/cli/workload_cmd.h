// seedctl workload submit|list|status|logs|events|describe|lineage|cancel|history and
// seedctl rollback (docs/cli.md): the flags of each command and the function that runs it.
// Every command talks to rsl-controller through the connection flags (workload_client.h).
// Functions print to stdout/stderr and end a failing command by throwing Exit (cli.h).
#pragma once

#include <string>

#include "cli/workload_client.h"

namespace rsl::cli {

//! A command about one workload version (events, describe, lineage, cancel, rollback).
struct WorkloadIdFlags {
  ConnFlags conn;
  std::string id;  //!< wl-YYYYMMDD-<8 hex>
};

struct WorkloadSubmitFlags {
  ConnFlags conn;
  std::string file;
};
//! Sends the file as a new immutable version (relative data URIs mean its directory).
void RunWorkloadSubmit(const WorkloadSubmitFlags& flags);

struct WorkloadListFlags {
  ConnFlags conn;
  bool all_namespaces = false;
  int64_t limit = 0;          //!< at most this many items (0: all), as the API's ?limit=
  std::string continue_from;  //!< the previous page's metadata.continue
};
void RunWorkloadList(const WorkloadListFlags& flags);

struct WorkloadStatusFlags : WorkloadIdFlags {
  bool watch = false;      //!< follow the workload's event stream until it ends
  int interval_ms = 1000;  //!< `watch`: wait before reopening a dropped stream
};
void RunWorkloadStatus(const WorkloadStatusFlags& flags);

struct WorkloadLogsFlags : WorkloadIdFlags {
  std::string step;  //!< "" = every step, in pipeline order
  int replica = -1;  //!< a serving step's replica (-1: every replica that wrote)
  bool follow = false;
};
//! Streams the captured output to stdout as it arrives.
void RunWorkloadLogs(const WorkloadLogsFlags& flags);

struct WorkloadEventsFlags : WorkloadIdFlags {
  bool watch = false;  //!< then each new event from the event stream, until the run ends
};
void RunWorkloadEvents(const WorkloadEventsFlags& flags);
struct WorkloadDescribeFlags : WorkloadIdFlags {
  int64_t limit = -1;         //!< steps per page, as the API's ?limit= (0: all; -1: its default)
  std::string continue_from;  //!< the previous page's status.stepsContinue
  int64_t event_limit = -1;   //!< the last this many events (0: all; -1: the API's default)
};
void RunWorkloadDescribe(const WorkloadDescribeFlags& flags);
void RunWorkloadLineage(const WorkloadIdFlags& flags);
void RunWorkloadCancel(const WorkloadIdFlags& flags);

struct WorkloadHistoryFlags {
  ConnFlags conn;
  std::string name;  //!< metadata.name
};
void RunWorkloadHistory(const WorkloadHistoryFlags& flags);

//! Runs an earlier version's stored snapshot again, as a new version.
void RunRollback(const WorkloadIdFlags& flags);

}  // namespace rsl::cli
