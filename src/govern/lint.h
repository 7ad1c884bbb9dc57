// `seedctl k8s lint`: static checks of workload manifests (seed 003 ch.1 "invalid autoscaling"
// and ch.2): missing requests/limits and probes, HorizontalPodAutoscalers whose target does
// not resolve, HPA-managed Deployments with fixed replicas, min replicas without resource
// limits, and a CPU utilisation target on a GPU workload without a GPU memory target.
#pragma once

#include <vector>

#include "govern/findings.h"
#include "govern/k8s_objects.h"

namespace rsl::govern {

std::vector<RuleInfo> LintRules();

//! Adds LINT001..LINT010 findings for `objects` to `report`.
void Lint(const std::vector<K8sObject>& objects, Report* report);

}  // namespace rsl::govern
