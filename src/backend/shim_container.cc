#include "backend/shim_container.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace rsl::shim {

namespace {

void RemoveConfigDir(const std::string& dir) {
  unlink((dir + "/config.json").c_str());
  rmdir(dir.c_str());
}

}  // namespace

void RemoveStaleContainers(const std::string& state_dir) {
  std::string root = state_dir + "/runc";
  DIR* d = opendir(root.c_str());
  if (d == nullptr) return;
  std::vector<std::string> ids;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") ids.push_back(name);
  }
  closedir(d);
  for (const auto& id : ids) {
    pid_t pid = fork();
    if (pid == 0) {
      int null = open("/dev/null", O_RDWR);
      if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
      }
      // runc from PATH, else where Debian installs it (a daemon's PATH may lack sbin).
      for (const char* runc : {"runc", "/usr/sbin/runc", "/usr/bin/runc"}) {
        execlp(runc, "runc", "--root", root.c_str(), "delete", "--force", id.c_str(),
               static_cast<char*>(nullptr));
      }
      _exit(127);
    }
    if (pid > 0) {
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    RemoveConfigDir(state_dir + "/containers/" + id);
  }
}

void RemoveContainerConfig(const std::vector<std::string>& argv) {
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == "--bundle") return RemoveConfigDir(argv[i + 1]);
  }
}

}  // namespace rsl::shim
