// An append-only log of records, each with a log sequence number (LSN, 1, 2, ...), in segment
// files <dir>/<first LSN, 20 digits>.tlog. The durable record of the engine's transitions
// when the store runs with one (store/log_store.cc): a turn is one record, appended and
// fdatasync'ed, and SQLite's tables are written from the records afterwards.
//
// A record: u32 payload length, u32 CRC-32 of the LSN and the payload, u64 LSN (all little
// endian), then the payload. A record is acknowledged only once it is whole on disk, so a
// damaged record can only be the last one of the last segment (the process died while
// writing it): Open cuts it off. Damage anywhere else, or a gap in the LSNs, is an error.
//
// Threading: Append and Reset from one thread at a time; DropThrough may run beside them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace rsl::store {

class TransitionLog {
 public:
  struct Options {
    bool sync = true;                      //!< fdatasync each append
    uint64_t segment_bytes = 32ull << 20;  //!< a new segment once the current one is past this
  };
  using ReplayFn = std::function<Status(uint64_t lsn, std::string_view payload)>;

  //! Opens the log in `dir` (created if missing) and calls `replay` for every record with an
  //! LSN above `applied`, in order. The next Append continues after the last record (or
  //! after `applied`, whichever is higher). Errors: IO_ERROR (a damaged record that is not
  //! the last, a gap, a file that cannot be read); replay's own errors.
  static Result<std::unique_ptr<TransitionLog>> Open(const std::string& dir, const Options& options,
                                                     uint64_t applied, const ReplayFn& replay);
  ~TransitionLog();

  uint64_t last_lsn() const { return last_lsn_; }

  //! Bytes a record's frame takes before its payload: a caller that builds its record with
  //! this much room at the front hands it to AppendFramed and nothing is copied again.
  static constexpr size_t kFrameBytes = 16;

  //! Appends one record with LSN last_lsn() + 1, durable when it returns OK (with
  //! options.sync). On an error nothing of it stays in the log; if even the undo failed the
  //! log refuses every later Append (IO_ERROR), so that no record follows a damaged one.
  Result<uint64_t> Append(std::string_view payload);
  //! The same for `record` = kFrameBytes of room (filled in here), then the payload.
  Result<uint64_t> AppendFramed(std::string* record);

  //! Deletes the segments whose records all have LSN <= `lsn`, except the one being written.
  Status DropThrough(uint64_t lsn);
  //! The last LSN of the newest segment no longer written (DropThrough of it deletes every
  //! such segment); 0 when there is none.
  uint64_t ClosedThrough() const;

  //! Deletes every segment and starts an empty one after `lsn` (every record is applied).
  Status Reset(uint64_t lsn);

 private:
  struct Segment {
    std::string path;
    uint64_t first = 0, last = 0;  // last = first - 1 while empty
    uint64_t size = 0;
  };
  TransitionLog(std::string dir, Options options) : dir_(std::move(dir)), options_(options) {}
  Status StartSegment(uint64_t first);

  std::string dir_;
  Options options_;
  int fd_ = -1;  // the current segment (segments_.back())
  uint64_t last_lsn_ = 0;
  bool broken_ = false;
  std::string buf_;
  mutable std::mutex mu_;
  std::vector<Segment> segments_;  // GUARDED_BY(mu_), oldest first
};

}  // namespace rsl::store
