#include "model/subprocess.h"

#include "base/codes.h"
#include "base/env.h"

namespace rsl::model {

Result<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                 const std::map<std::string, std::string>& env, int64_t timeout_ms,
                                 bool merge_stderr, size_t max_output) {
  if (argv.empty()) return Error(codes::kInvalidArgument, "no program to run");
  ProcessSpec spec;
  spec.argv = argv;
  spec.env = env;
  spec.timeout_ms = timeout_ms;
  spec.stderr_to = merge_stderr ? ProcessSpec::Stderr::kMerge : ProcessSpec::Stderr::kDiscard;
  spec.max_output = max_output;
  auto run = Env::Default()->RunProcess(spec);
  if (!run.ok()) return run.error();
  if (run->timed_out) {
    return Error(codes::kIoError,
                 argv[0] + " timed out after " + std::to_string(timeout_ms) + " ms");
  }
  if (run->output_exceeded) {
    return Error(codes::kIoError,
                 argv[0] + " wrote more than " + std::to_string(max_output) + " bytes");
  }
  ProcessResult result;
  result.exit_code = run->exit_code;
  result.out = std::move(run->out);
  return result;
}

}  // namespace rsl::model
