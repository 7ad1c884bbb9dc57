#include "backend/shim_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace rsl::shim {

void Mask(std::string* data, const std::vector<std::string>& secrets) {
  for (const auto& s : secrets) {
    if (s.empty()) continue;
    size_t p = 0;
    while ((p = data->find(s, p)) != std::string::npos) {
      data->replace(p, s.size(), "***");
      p += 3;
    }
  }
}

void WriteLog(Attempt* a, const char* data, size_t len) {
  if (len == 0) return;
  if (!a->log_opened) {
    a->log_opened = true;
    if (!a->log_path.empty()) {
      a->log_fd = open(a->log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
  }
  while (a->log_fd >= 0 && len > 0) {
    ssize_t n = write(a->log_fd, data, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    len -= size_t(n);
  }
}

}  // namespace rsl::shim
