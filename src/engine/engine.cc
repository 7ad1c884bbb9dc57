#include "engine/engine.h"

#include "base/codes.h"

namespace rsl::engine {

// Skeleton: the implementation lands in the next commits.
class Engine::Impl {};

Engine::Engine(store::Store*, backend::Backend*, Hooks, Clock*, EngineOptions) {}
Engine::~Engine() = default;
Status Engine::Start() { return Error(codes::kInternal, "engine not implemented yet"); }
void Engine::Stop(bool) {}
Result<std::string> Engine::Submit(const spec::Workload&, const std::string&,
                                   const SubmitOptions&) {
  return Error(codes::kInternal, "engine not implemented yet");
}
Status Engine::Cancel(const std::string&, const std::string&) {
  return Error(codes::kInternal, "engine not implemented yet");
}
Status Engine::Recover() { return Error(codes::kInternal, "engine not implemented yet"); }
Result<store::Run> Engine::Wait(const std::string&, int64_t) {
  return Error(codes::kInternal, "engine not implemented yet");
}
int Engine::Subscribe(Subscriber) { return 0; }
void Engine::Unsubscribe(int) {}
int64_t Engine::WaitForEvents(int64_t after_seq, int64_t) { return after_seq; }
RunControl* Engine::control() { return nullptr; }
Result<std::string> Engine::ResolveRunId(const std::string& id) {
  return Error(codes::kInternal, "engine not implemented yet");
}
Engine::Stats Engine::stats() { return {}; }

}  // namespace rsl::engine
