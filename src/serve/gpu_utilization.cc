#include "serve/gpu_utilization.h"

#include <charconv>

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::serve {
namespace {

//! nvidia-smi answers in well under a second; one that hangs (a wedged driver) must not stall
//! the replica set's loop for long.
constexpr int64_t kNvidiaSmiTimeoutMs = 5'000;

std::optional<int> ParseIndex(std::string_view s) {
  int v = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace

std::vector<std::string> GpuUtilizationCommand(const std::string& nvidia_smi) {
  return {nvidia_smi, "--query-gpu=index,utilization.gpu", "--format=csv,noheader,nounits"};
}

Result<std::map<int, double>> ParseGpuUtilization(const std::string& csv) {
  std::map<int, double> out;
  for (const auto& raw : Split(csv, '\n')) {
    std::string line(Trim(raw));
    if (line.empty()) continue;
    std::vector<std::string> f = Split(line, ',');
    std::optional<int> index;
    if (f.size() == 2) index = ParseIndex(Trim(f[0]));
    if (!index) {
      return Error(codes::kInternal, "nvidia-smi's utilization line is not \"index, percent\"")
          .Value(line);
    }
    std::string pct(Trim(f[1]));
    if (!pct.empty() && pct.front() == '[') continue;  // [N/A], [Not Supported]
    double v = 0;
    auto [end, ec] = std::from_chars(pct.data(), pct.data() + pct.size(), v);
    if (ec != std::errc() || end != pct.data() + pct.size() || v < 0) {
      return Error(codes::kInternal, "nvidia-smi's utilization is not a number").Value(line);
    }
    out[*index] = v / 100.0;
  }
  return out;
}

std::vector<int> VisibleDevices(const std::string& cuda_visible_devices) {
  std::vector<int> out;
  for (const auto& part : Split(cuda_visible_devices, ',')) {
    if (auto i = ParseIndex(Trim(part))) out.push_back(*i);
  }
  return out;
}

std::optional<double> DevicesUtilization(const std::map<int, double>& by_index,
                                         const std::vector<int>& devices) {
  double sum = 0;
  int n = 0;
  for (int d : devices) {
    auto it = by_index.find(d);
    if (it == by_index.end()) continue;
    sum += it->second;
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

Result<std::map<int, double>> ProbeGpuUtilization(Env* env, const std::string& nvidia_smi) {
  ProcessSpec p;
  p.argv = GpuUtilizationCommand(nvidia_smi);
  p.timeout_ms = kNvidiaSmiTimeoutMs;
  p.stderr_to = ProcessSpec::Stderr::kDiscard;
  p.max_output = 64 * 1024;
  auto r = env->RunProcess(p);
  if (!r.ok()) return r.error();
  if (r->exit_code != 0 || r->timed_out) {
    return Error(codes::kIoError, nvidia_smi + " failed (exit " + std::to_string(r->exit_code) +
                                      (r->timed_out ? ", timed out" : "") + ")")
        .Value(nvidia_smi);
  }
  return ParseGpuUtilization(r->out);
}

}  // namespace rsl::serve
