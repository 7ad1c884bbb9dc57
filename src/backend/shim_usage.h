// What an attempt without cgroup counters uses now: the sums over its process group in /proc.
#pragma once

#include <sys/types.h>

#include <map>

namespace rsl::shim {

//! What the processes of one process group use now, from /proc/<pid>/stat.
struct GroupUsage {
  long long cpu_ticks = 0;  //!< utime + stime + cutime + cstime (children they waited for)
  long long rss_pages = 0;
};

//! Sums /proc/<pid>/stat over the processes of each group in `groups` (the keys: process
//! group ids), in one pass over /proc. Groups with no process stay at zero.
void ReadGroupUsage(std::map<pid_t, GroupUsage>* groups);

}  // namespace rsl::shim
