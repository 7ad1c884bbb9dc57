// seedctl k8s render -f WORKLOAD: every object the Kubernetes backend would create for a run,
// as multi-document YAML (or a JSON list), for review and GitOps. No cluster needed.
#include "cli/k8s_render_cmd.h"

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "cli/cli.h"
#include "k8s/names.h"
#include "k8s/render.h"
#include "spec/capabilities.h"
#include "spec/parse.h"

namespace rsl::cli {

void RunK8sRender(const K8sRenderFlags& f) {
  spec::ParseOptions parse_options;
  std::unique_ptr<spec::CapabilityCatalog> catalog;
  if (!f.capabilities.empty()) {
    auto loaded = spec::CapabilityCatalog::Load(f.capabilities);
    if (!loaded.ok()) FailWith(loaded.error());
    catalog = std::make_unique<spec::CapabilityCatalog>(std::move(loaded).value());
    parse_options.catalog = catalog.get();
  }
  spec::ParseResult parsed = spec::ParseWorkloadFile(f.file, parse_options);
  if (!parsed.ok()) FailWith(parsed.errors);
  for (const auto& w : parsed.warnings) std::cerr << "warning: " << w.ToString() << "\n";
  spec::Workload& w = parsed.workload;
  if (!f.rsl_namespace.empty()) w.namespace_ = f.rsl_namespace;

  k8s::RenderContext ctx;
  ctx.run_id = f.run_id;
  if (ctx.run_id.empty()) {
    FailWith(Error(codes::kInvalidArgument, "--run-id is empty")
                 .Path("--run-id")
                 .Hint("e.g. --run-id run-1"));
  }
  if (!f.k8s_namespace.empty()) {
    if (!k8s::IsDnsLabel(f.k8s_namespace)) {
      FailWith(Error(codes::kInvalidArgument, "--k8s-namespace is not a Kubernetes namespace name")
                   .Path("--k8s-namespace")
                   .Value(f.k8s_namespace)
                   .Hint("a DNS-1123 label: a-z, 0-9 and '-', at most 63"));
    }
    ctx.namespaces[w.namespace_] = f.k8s_namespace;
  }
  if (!f.capability_labels.empty()) {
    auto table = k8s::CapabilityLabels::Load(f.capability_labels);
    if (!table.ok()) FailWith(table.error());
    ctx.capability_labels = std::move(table).value();
  }
  ctx.staging_prefix = f.staging_prefix;
  if (!f.default_image.empty()) ctx.default_image = f.default_image;
  ctx.cpu_limits = !f.no_cpu_limits;

  auto objects = k8s::RenderRun(w, ctx);
  if (!objects.ok()) FailWith(objects.error());
  if (f.output == "json") {
    std::cout << nlohmann::json(*objects).dump(2) << "\n";
  } else {
    std::cout << k8s::ToYamlDocuments(*objects);
  }
}

void RegisterK8sRenderCommand(CLI::App* k8s) {
  auto flags = std::make_shared<K8sRenderFlags>();
  CLI::App* c = k8s->add_subcommand(
      "render",
      "Print every Kubernetes object a run of the workload becomes (Pods, Secrets, ConfigMaps; "
      "Deployment, Service and HPA for serving steps), as YAML for review and GitOps");
  c->add_option("-f,--file", flags->file, "AIWorkload YAML file")->required();
  c->add_option("--namespace", flags->rsl_namespace,
                "RSL namespace of the run (default: the workload's metadata.namespace)");
  c->add_option("--k8s-namespace", flags->k8s_namespace,
                "Kubernetes namespace the objects go to (default: the RSL namespace's name)");
  c->add_option("--capability-labels", flags->capability_labels,
                "capability -> node label table (YAML) overriding or adding to the NVIDIA GPU "
                "feature discovery defaults");
  c->add_option("--capabilities", flags->capabilities,
                "capability catalog file (extra capability names validation accepts)");
  c->add_option("--run-id", flags->run_id, "run id the objects are named after (default run-1)");
  c->add_option("--staging-prefix", flags->staging_prefix,
                "object-store prefix steps write outputs under (default s3://rsl-staging)");
  c->add_option("--default-image", flags->default_image,
                std::string("image of steps that name none (default ") + k8s::kDefaultImage + ")");
  c->add_flag("--no-cpu-limits", flags->no_cpu_limits,
              "leave cpu limits out (pods become Burstable; memory and GPU limits stay)");
  AddOutput(c, &flags->output, {"yaml", "json"});
  Bind(c, flags, &RunK8sRender);
}

}  // namespace rsl::cli
