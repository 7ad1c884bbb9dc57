#include "backend/slurm_runner.h"

#include <unistd.h>

#include "base/codes.h"

extern char** environ;

namespace rsl::backend {
namespace {

// The real commands, through the Env's process API.
class ProcessRunner : public CommandRunner {
 public:
  ProcessRunner(std::map<std::string, std::string> env_overrides, int64_t timeout_ms, Env* env)
      : timeout_ms_(timeout_ms), os_(env ? env : Env::Default()) {
    for (char** e = environ; *e != nullptr; ++e) {
      std::string kv = *e;
      size_t eq = kv.find('=');
      if (eq == std::string::npos) continue;
      env_[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (auto& [k, v] : env_overrides) env_[k] = v;
  }

  Result<CommandOutput> Run(const std::vector<std::string>& argv) override {
    if (argv.empty()) return Error(codes::kInternal, "empty command");
    ProcessSpec spec;
    spec.argv = argv;
    spec.env = env_;
    spec.timeout_ms = timeout_ms_;
    auto run = os_->RunProcess(spec);
    if (!run.ok()) {
      Error e = run.error();
      return e.Hint("is Slurm's client (slurm-client) installed and on PATH?");
    }
    CommandOutput result;
    result.out = std::move(run->out);
    result.err = std::move(run->err);
    result.exit_code = run->exit_code;
    if (run->timed_out) {
      result.exit_code = -1;
      result.err += "\n" + argv[0] + ": killed after " + std::to_string(timeout_ms_) + " ms";
    }
    return result;
  }

 private:
  int64_t timeout_ms_;
  Env* os_;
  std::map<std::string, std::string> env_;  // the commands' whole environment
};

}  // namespace

std::unique_ptr<CommandRunner> NewProcessRunner(std::map<std::string, std::string> env_overrides,
                                                int64_t timeout_ms, Env* env) {
  return std::make_unique<ProcessRunner>(std::move(env_overrides), timeout_ms, env);
}

}  // namespace rsl::backend
