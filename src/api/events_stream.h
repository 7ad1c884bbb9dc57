// Server-sent events (text/event-stream, https://html.spec.whatwg.org/#server-sent-events)
// for the console and `seedctl ... --watch`: the controller pushes what changed instead of
// clients polling the REST API. Both streams are StreamSources (http_server.h): they run on
// the server's stream thread, read the Service only after a change (Service::ChangeSeq) or
// every refresh interval, and never block for long: after a read that took t, the next waits
// at least 4t, so a watcher of a 10,000-step run keeps the shared thread busy a fifth of the
// time at most.
//
// One workload (GET /api/v1/workloads/{id}/watch[?logStep=S|allLogs=true][&tailBytes=N]):
//   workload  the whole Workload object, once at the start
//   status    the object's status without its steps, when it changes
//   step      one step (as in status.steps[]) when it changes: phase, attempts, usage...
//   event     one new event (as in the EventList), in sequence order
//   log       {"step", "text"}: new lines of step S's log, from its last N bytes on (with
//             allLogs, every step's log in spec order, one after the other)
//   logEnd    {"step"}: that step is terminal and its log has been read to the end
//   end       the run is terminal (and the logs read to their end): the stream ends
// The list (GET /api/v1/watch/workloads, the namespaces of GET /api/v1/workloads), over its
// newest WatchOptions::list_window workloads:
//   ready     the watcher's baseline is taken: read pages through the REST API now
//   workload  one summary line (as in the AIWorkloadList) that is new or changed
// A comment line (": keep-alive") goes out every 15 s of silence, so proxies keep the
// connection and a dead client is noticed.
//
// Threading: a stream is used by one thread at a time (the server's stream thread).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/http_message.h"
#include "api/service.h"

namespace rsl::api {

//! "event: TYPE\ndata: JSON\n\n" (JSON on one line: dump() escapes newlines).
std::string SseEvent(const std::string& type, const Json& data);

struct WatchOptions {
  //! How often a watcher looks at the Service's change counter.
  std::chrono::milliseconds poll{250};
  //! A running workload is re-read this often even without a change (usage and progress
  //! are sampled, not evented).
  std::chrono::milliseconds refresh{2000};
  std::chrono::milliseconds keep_alive{15000};
  //! After a read that took t, the next waits at least factor * t: a watcher of a huge run
  //! keeps the shared stream thread busy a fifth of the time at most, however often it changes.
  int slow_read_factor = 4;
  //! Events sent at the start of a workload stream: the latest ones (a 10,000-step run has
  //! tens of thousands; the REST API has them all).
  size_t initial_events = 500;
  //! The list stream follows the newest this many workloads of its filter (one page read from
  //! the store's index, whatever the list's size): the page a console shows is among them.
  size_t list_window = 500;
};

class WorkloadWatch : public StreamSource {
 public:
  //! `logs` (may be empty): the step logs to follow, one after the other, each at the place
  //! to start from. Nothing is owned but the logs; the service outlives the stream.
  WorkloadWatch(Service* service, std::string id, std::vector<std::unique_ptr<StepLog>> logs,
                WatchOptions options = {});
  State Next(size_t max_bytes, std::string* out) override;

 private:
  //! Reads the workload and appends what changed; false when it is gone (an error event).
  bool Reread(std::string* out);
  void NewEvents(std::string* out);
  //! Appends the next piece of the log being followed; kMore when more may be waiting.
  State FollowLog(size_t max_bytes, std::string* out);

  Service* service_;
  std::string id_;
  std::vector<std::unique_ptr<StepLog>> logs_;
  size_t log_index_ = 0;  // logs_[log_index_] is followed; all done when == size()
  WatchOptions options_;
  bool started_ = false;
  bool terminal_ = false;
  int64_t seen_change_ = -2;
  int64_t last_event_seq_ = 0;
  std::string phase_;
  std::string status_;                        // dumped, without steps
  std::map<std::string, std::string> steps_;  // name -> dumped step
  std::chrono::steady_clock::time_point next_poll_{};
  std::chrono::steady_clock::time_point next_refresh_{};
  std::chrono::steady_clock::time_point last_write_{};
};

class WorkloadListWatch : public StreamSource {
 public:
  //! `namespaces` as Service::ListWorkloads (empty = all), `name` filters.
  WorkloadListWatch(Service* service, std::vector<std::string> namespaces, std::string name,
                    WatchOptions options = {});
  State Next(size_t max_bytes, std::string* out) override;

 private:
  Service* service_;
  std::vector<std::string> namespaces_;
  std::string name_;
  WatchOptions options_;
  bool started_ = false;
  int64_t seen_change_ = -2;
  std::map<std::string, std::string> items_;  // id -> dumped summary, of the window
  std::chrono::steady_clock::time_point next_poll_{};
  std::chrono::steady_clock::time_point last_write_{};
};

//! Whether a run phase name (PENDING, RUNNING, SUCCEEDED...) is terminal.
bool IsTerminalPhaseName(const std::string& phase);

}  // namespace rsl::api
