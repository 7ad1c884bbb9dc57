#include "cli/default_hooks.h"

#include "data/admission.h"
#include "govern/cost_hook.h"
#include "govern/policy_hook.h"
#include "model/model_hooks.h"

namespace rsl::cli {

engine::Hooks DefaultHooks(const std::string& state_dir) {
  engine::Hooks hooks;
  // Admission, cheapest first: images, dependencies and declared outputs are answered from the
  // environment registry in milliseconds; the data contract may read the whole input.
  hooks.admission.push_back(model::EnvironmentAdmissionCheck(state_dir));
  hooks.admission.push_back(std::make_shared<data::DataAdmissionCheck>(state_dir));
  // Step hooks: the model hook resolves the image before launch and checks tensors and
  // fingerprints after; policies watch running steps; cost is recorded for every attempt.
  hooks.steps.push_back(model::ModelStepHook(state_dir));
  hooks.steps.push_back(std::make_shared<govern::PolicyHook>(state_dir));
  hooks.steps.push_back(std::make_shared<govern::CostHook>(state_dir));
  return hooks;
}

}  // namespace rsl::cli
