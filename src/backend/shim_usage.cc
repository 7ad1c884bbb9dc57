#include "backend/shim_usage.h"

#include <dirent.h>

#include <cstdlib>
#include <string>

#include "backend/shim_io.h"

namespace rsl::shim {

void ReadGroupUsage(std::map<pid_t, GroupUsage>* groups) {
  DIR* d = opendir("/proc");
  if (!d) return;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    std::string stat = ReadSmall(std::string("/proc/") + e->d_name + "/stat");
    size_t paren = stat.rfind(')');  // the command name may hold anything but not after this
    if (paren == std::string::npos) continue;
    // Fields after the name: 3 state, 4 ppid, 5 pgrp, ... 14 utime 15 stime 16 cutime
    // 17 cstime ... 24 rss (man 5 proc).
    long long f[25] = {0};
    const char* p = stat.c_str() + paren + 1;
    for (int field = 3; field <= 24 && *p; ++field) {
      while (*p == ' ') ++p;
      f[field] = atoll(p);
      while (*p && *p != ' ') ++p;
    }
    auto it = groups->find(pid_t(f[5]));
    if (it == groups->end()) continue;
    it->second.cpu_ticks += f[14] + f[15] + f[16] + f[17];
    it->second.rss_pages += f[24];
  }
  closedir(d);
}

}  // namespace rsl::shim
