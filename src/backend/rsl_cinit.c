/* rsl-cinit: the first process of every container the local backend runs (docs/image.md).
 * Bind-mounted read-only at /.rsl/init and run by runc as the container's PID 1, it
 *  - asks for SIGKILL when its parent (the `runc run` that rsl-shim started) dies: PID 1
 *    dying ends the whole PID namespace, so a SIGKILLed supervisor takes its containers
 *    along (runc itself leaves them running);
 *  - runs the step's command as its child, forwards SIGTERM/SIGINT/SIGHUP/SIGQUIT/SIGUSR1/
 *    SIGUSR2 to it (a PID 1 without handlers ignores them), reaps every orphan, and exits
 *    with the command's status (128+N when a signal N killed it).
 * Static C (no libstdc++, no sanitizers): it runs inside images that have no libc of ours. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile pid_t child = -1;

static void forward(int sig) {
  if (child > 0) kill(child, sig);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: rsl-cinit COMMAND [ARG...]\n");
    return 127;
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  /* Parent already gone (outside our PID namespace getppid() is 0 either way): nothing to do. */
  const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &old);
  child = fork();
  if (child < 0) {
    fprintf(stderr, "rsl-cinit: fork: %s\n", strerror(errno));
    return 127;
  }
  if (child == 0) {
    sigprocmask(SIG_SETMASK, &old, NULL);
    execvp(argv[1], argv + 1);
    fprintf(stderr, "rsl-cinit: cannot run %s: %s\n", argv[1], strerror(errno));
    _exit(127);
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = forward;
  for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); ++i) sigaction(sigs[i], &sa, NULL);
  sigprocmask(SIG_SETMASK, &old, NULL);
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      return 127;
    }
    if (pid != child) continue; /* an orphan reaped */
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
  }
}
