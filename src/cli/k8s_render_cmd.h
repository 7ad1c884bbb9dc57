// seedctl k8s render: the Kubernetes objects a run of a workload becomes (docs/backends/k8s.md).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace rsl::cli {

struct K8sRenderFlags {
  std::string file;
  std::string rsl_namespace;  //!< "" = the workload's metadata.namespace
  std::string k8s_namespace;  //!< "" = the RSL namespace's name
  std::string capability_labels;
  std::string capabilities;  //!< capability catalog (extra names validation accepts)
  std::string run_id = "run-1";
  std::string staging_prefix;  //!< "" = s3://rsl-staging
  std::string default_image;   //!< "" = k8s::kDefaultImage
  bool no_cpu_limits = false;
  std::string output = "yaml";
};

void RunK8sRender(const K8sRenderFlags& f);
//! Adds `render` under the `k8s` command group.
void RegisterK8sRenderCommand(CLI::App* k8s);

}  // namespace rsl::cli
