// rsl-shim: the local backend's step supervisor, ONE per state directory.
//
//   rsl-shim --serve --state-dir DIR --socket NAME
//
// main() checks the arguments, daemonizes (own session, chdir /, stdio on /dev/null,
// inherited fds closed), becomes a child subreaper, resets its signal state and runs the
// Supervisor (shim_supervisor.h: what it does and its protocol).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "backend/shim_supervisor.h"

int main(int argc, char** argv) {
  std::string state_dir, socket_name;
  bool serve = false;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--serve") {
      serve = true;
    } else if (k == "--state-dir" && i + 1 < argc) {
      state_dir = argv[++i];
    } else if (k == "--socket" && i + 1 < argc) {
      socket_name = argv[++i];
    } else {
      state_dir.clear();
      break;
    }
  }
  if (!serve || state_dir.empty() || socket_name.empty()) {
    fprintf(stderr, "usage: rsl-shim --serve --state-dir DIR --socket NAME\n");
    return 2;
  }
  // Daemonize: a new session (the backend's spawn made us no group leader), then fork so
  // the backend reaps our parent at once and we are nobody's child but init's.
  setsid();
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid > 0) _exit(0);
  if (chdir("/") != 0) return 1;
  int null_fd = open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    dup2(null_fd, 0);
    dup2(null_fd, 1);
    dup2(null_fd, 2);
  }
  syscall(SYS_close_range, 3, ~0U, 0);
  // Orphaned descendants (a step's background jobs) become our children, so they are
  // reaped here and never linger as zombies.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  // Not open to a step that runs as our user (isolation "namespace"): our memory, our open
  // files and our root through /proc. A step's exec makes it dumpable again, for itself.
  prctl(PR_SET_DUMPABLE, 0);
  // Steps inherit our signal state: start from the defaults, whatever the engine that
  // started us had blocked or ignored (seedctl blocks SIGINT/SIGTERM for its sigwait).
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  rsl::shim::Supervisor supervisor;
  return supervisor.Run(state_dir, socket_name);
}
