// rsl-shim's exit records and the exit journals they are appended to. ReadExitFile in
// local.cc is the reader: keep the two in step.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "backend/shim_launch.h"

namespace rsl::shim {

//! The exit record: key=value lines (exit_code, signal, oom, stop, wall_ms, cpu_ms,
//! peak_memory_bytes, peak_cpu_millicores, limits, started_us, ended_us, message), "end=1"
//! last (ReadExitFile rejects a record without it). Newlines in `message` become spaces.
std::string Record(int exit_code, int sig, bool oom, const std::string& stop, int64_t wall_ms,
                   long long cpu_ms, long long peak, long long peak_cpu_millicores,
                   const std::string& limits, int64_t started_us, int64_t ended_us,
                   const std::string& message);

//! The highest CPU rate of an attempt, in millicores: the highest rate between two usage
//! samples, or the attempt's average when that is higher (a step shorter than one sample
//! interval, or busiest after the last sample). 0 when `wall_ms` is 0.
long long PeakCpuMillicores(long long sampled_peak, long long cpu_ms, int64_t wall_ms);

//! The record's "limits": the mechanism, and the limits asked for when there are any
//! ("cgroup v2 (memory 1048576, cpu 500m)").
std::string LimitsText(const Attempt& a);

//! The journal's directory: everything up to the exit file's last "/" (with it); "" when the
//! exit file has no "/".
std::string JournalDir(const std::string& exit_file);

//! The exit journals, <dir>/exits, one per directory of exit files. Appending to one costs no
//! inode allocation, the most expensive thing a short step does on ext4 (one file per attempt
//! would). A journal is kept open while attempts recording there are alive (Hold .. Release).
//! Not thread-safe (the supervisor has one).
class ExitJournals {
 public:
  ExitJournals() = default;
  ExitJournals(const ExitJournals&) = delete;
  ExitJournals& operator=(const ExitJournals&) = delete;

  //! Appends the record to <dir of exit_file>/exits, framed as
  //! "\nattempt=<basename of exit_file>\n" + record, in ONE write: a record torn by a crash
  //! lacks its "end=1", and the next one starts on a line of its own whatever the torn one
  //! left (even zeros after a power loss). When the journal cannot take it (or the name has
  //! no usable basename) the record becomes exit_file itself. Not fsynced: after a power loss
  //! an unrecorded attempt is simply run again. Nothing for an empty exit_file.
  void Write(const std::string& exit_file, const std::string& record);
  //! One more live attempt records in `dir` (a JournalDir).
  void Hold(const std::string& dir) { journals_[dir].live++; }
  //! One fewer; the last one closes the journal.
  void Release(const std::string& dir);
  //! True while some live attempt records in `dir`: the directory exists.
  bool Held(const std::string& dir) const { return journals_.count(dir) > 0; }

 private:
  struct Journal {
    int fd = -1;
    int live = 0;
  };
  std::map<std::string, Journal> journals_;  // directory (with its "/") -> its journal
};

}  // namespace rsl::shim
