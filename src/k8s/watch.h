#pragma once

// List+watch, as client-go's reflector does it, without client-go:
//   1. LIST the collection (label selector); remember the List's metadata.resourceVersion.
//   2. WATCH from it (`?watch=1&resourceVersion=RV&allowWatchBookmarks=true`): a chunked stream
//      of newline-delimited JSON events {"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR,
//      "object": {...}}; every event moves RV forward.
//   3. A stream that ends or is cut: WATCH again from the last RV seen (nothing lost, nothing
//      twice). 410 Gone, as the HTTP status or as an ERROR event whose Status has code 410:
//      the RV is too old, go back to 1 (a relist; the cache reports what changed meanwhile).
//
// Informer keeps the objects in a cache keyed by name and calls back once per change, from
// the thread that runs it. A malformed line in the stream is an error with a code (never a
// crash): the informer drops the stream and resumes from the last good RV.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "k8s/api_client.h"

namespace rsl::k8s {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };
const char* Name(WatchEventType type);

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  nlohmann::json object;  //!< the object; a Status for kError
};

//! One line of a watch stream. Errors: K8S_API_ERROR ("malformed watch event: ...") for a line
//! that is not JSON, not an object, has an unknown type or no object.
Result<WatchEvent> ParseWatchLine(std::string_view line);

//! Splits a byte stream into lines ('\n'), keeping a partial line until its end arrives.
class LineSplitter {
 public:
  //! Appends `data` and calls `on_line` for each complete line (without '\n'; empty lines
  //! skipped). Stops early, returning false, when `on_line` does.
  bool Feed(std::string_view data, const std::function<bool(std::string_view)>& on_line);
  //! Bytes of an unfinished line (a stream cut mid-line leaves some).
  size_t pending() const { return partial_.size(); }

 private:
  std::string partial_;
};

struct InformerStats {
  std::atomic<int64_t> lists{0};    //!< LISTs (1 + relists)
  std::atomic<int64_t> watches{0};  //!< WATCH requests (1 + resumes)
  std::atomic<int64_t> gone{0};     //!< 410s seen (status or event)
  std::atomic<int64_t> malformed{0};
};

//! A cache of the objects of one collection matching a label selector.
class Informer {
 public:
  struct Change {
    WatchEventType type;  //!< kAdded, kModified or kDeleted
    nlohmann::json object;
  };
  using Callback = std::function<void(const Change&)>;

  //! `collection`: e.g. /api/v1/namespaces/NS/pods. `label_selector` may be "". `on_change`
  //! runs on Run()'s thread, in the order the API server reported the changes.
  Informer(ApiClient* client, std::string collection, std::string label_selector,
           Callback on_change);

  //! List, then watch until `*stop`; resumes and relists as above, waiting
  //! `retry_backoff_ms` after an error that is not 410. Returns OK when stopped; an error only
  //! when the first LIST fails (the caller cannot start) or when `max_consecutive_errors`
  //! failures happen in a row.
  Status Run(const std::atomic<bool>* stop, int max_consecutive_errors = 20,
             int64_t retry_backoff_ms = 200);

  //! The cached objects by name, as of now (any thread).
  std::map<std::string, nlohmann::json> Snapshot() const;
  //! The last resourceVersion seen.
  std::string resource_version() const;
  //! True once the first LIST is in the cache.
  bool synced() const { return synced_.load(); }
  const InformerStats& stats() const { return stats_; }

  //! `timeoutSeconds` asked of each WATCH (the server ends the stream then; we resume).
  void set_watch_timeout_seconds(int s) { watch_timeout_s_ = s; }

 private:
  Status List();
  Status Watch(const std::atomic<bool>* stop);  // until the stream ends
  void Apply(WatchEventType type, const nlohmann::json& object);

  ApiClient* client_;
  std::string collection_;
  std::string selector_;
  Callback on_change_;
  int watch_timeout_s_ = 300;
  mutable std::mutex mu_;
  std::map<std::string, nlohmann::json> cache_;  // GUARDED_BY(mu_)
  std::string rv_;                               // GUARDED_BY(mu_)
  std::atomic<bool> synced_{false};
  InformerStats stats_;
};

//! Streams a pod's log (pods/log; `follow` keeps it open until the container ends) to
//! `on_data`. `container` "" = the pod's only container. Errors as ApiClient::Stream.
Status StreamPodLog(ApiClient* client, const std::string& ns, const std::string& pod,
                    const std::string& container, bool follow,
                    const std::function<bool(std::string_view)>& on_data,
                    const std::atomic<bool>* stop = nullptr);

}  // namespace rsl::k8s
