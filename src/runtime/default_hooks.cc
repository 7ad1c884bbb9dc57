#include "runtime/default_hooks.h"

#include "runtime/cost_hooks.h"
#include "runtime/data_hooks.h"
#include "runtime/model_hooks.h"
#include "runtime/policy_hooks.h"

namespace rsl::runtime {

engine::Hooks DefaultHooks(const std::string& state_dir, const model::ImageAccess& images,
                           const std::string& price_file) {
  engine::Hooks hooks;
  // Admission, cheapest first: images, dependencies and declared outputs are answered from the
  // environment registry in milliseconds; the data contract may read the whole input.
  hooks.admission.push_back(EnvironmentAdmissionCheck(state_dir, images));
  hooks.admission.push_back(std::make_shared<DataAdmissionCheck>(state_dir));
  // Step hooks: the model hook resolves the image before launch and checks tensors and
  // fingerprints after; policies watch running steps; cost is recorded for every attempt.
  hooks.steps.push_back(ModelStepHook(state_dir));
  hooks.steps.push_back(std::make_shared<PolicyHook>(state_dir));
  hooks.steps.push_back(std::make_shared<CostHook>(state_dir, nullptr, price_file));
  hooks.publisher = std::make_shared<DataPublisher>(state_dir);
  return hooks;
}

}  // namespace rsl::runtime
