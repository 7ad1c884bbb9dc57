#include "cli/image_cmd.h"

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "cli/cli.h"
#include "cli/table.h"
#include "cli/workload_format.h"
#include "image/reference.h"
#include "image/registry.h"
#include "model/image_inspect.h"

namespace rsl::cli {
namespace {

using nlohmann::json;

json DescriptorJson(const image::Descriptor& d) {
  return {{"digest", d.digest}, {"size", d.size}, {"mediaType", d.media_type}};
}

image::RegistryOptions Options(const ImageInspectFlags& f, const image::Reference& ref) {
  image::RegistryOptions o;
  size_t slash = f.platform.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == f.platform.size()) {
    FailWith(Error(codes::kInvalidArgument, "--platform must be OS/ARCHITECTURE")
                 .Path("--platform")
                 .Value(f.platform)
                 .Hint("e.g. --platform linux/amd64"));
  }
  o.os = f.platform.substr(0, slash);
  o.architecture = f.platform.substr(slash + 1);
  if (f.password_stdin && f.username.empty()) {
    FailWith(Error(codes::kInvalidArgument, "--password-stdin needs --username")
                 .Path("--username")
                 .Hint("e.g. --username alice --password-stdin < password-file"));
  }
  if (!f.username.empty()) {
    image::Credentials c{f.username, ""};
    if (f.password_stdin) std::getline(std::cin, c.password);
    if (!c.password.empty() && c.password.back() == '\r') c.password.pop_back();
    o.credentials[ref.registry] = c;
  }
  return o;
}

}  // namespace

void RunImageInspect(const ImageInspectFlags& f) {
  image::ParseOptions parse;
  parse.insecure_registries = f.insecure_registries;
  auto ref = image::ParseReference(f.ref, parse);
  if (!ref.ok()) FailWith(ref.error());
  image::RegistryClient client(Options(f, *ref));
  auto img = client.Resolve(*ref);
  if (!img.ok()) FailWith(img.error());
  // What admission checks model.dependencies against: the layers' package metadata.
  auto contents = model::InspectImage(&client, *img, "");
  if (!contents.ok()) FailWith(contents.error());
  std::vector<const model::Package*> python;
  size_t dpkg = 0;
  for (const auto& p : contents->packages) {
    if (p.kind == "python") python.push_back(&p);
    if (p.kind == "dpkg") ++dpkg;
  }
  if (f.output == "json") {
    json layers = json::array();
    for (const auto& l : img->layers) layers.push_back(DescriptorJson(l));
    json out = {{"name", ref->ToString()},
                {"digest", img->digest},
                {"mediaType", img->media_type},
                {"manifestSize", img->manifest_size},
                {"platform", img->platform},
                {"size", img->Size()},
                {"config", DescriptorJson(img->config)},
                {"layers", layers}};
    if (!img->index_digest.empty()) {
      out["index"] = {{"digest", img->index_digest}, {"mediaType", img->index_media_type}};
    }
    json packages = json::array();
    for (const auto* p : python) {
      packages.push_back({{"name", p->name}, {"version", p->version}, {"location", p->location}});
    }
    out["pythonPackages"] = packages;
    out["dpkgPackages"] = dpkg;
    out["packageSetDigest"] = contents->digest;
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << "Name:        " << ref->ToString() << "\n"
            << "Digest:      " << img->digest << "\n"
            << "MediaType:   " << img->media_type << "\n";
  if (!img->index_digest.empty()) {
    std::cout << "Index:       " << img->index_digest << " (" << img->index_media_type << ")\n";
  }
  std::cout << "Platform:    " << img->platform << "\n"
            << "Size:        " << BinaryBytes(img->Size()) << " (" << img->Size()
            << " bytes: config and " << img->layers.size() << " compressed layer"
            << (img->layers.size() == 1 ? "" : "s") << ")\n"
            << "Config:      " << img->config.digest << "\n"
            << "Layers:\n";
  Table t({"DIGEST", "SIZE", "MEDIA TYPE"});
  for (const auto& l : img->layers) t.AddRow({l.digest, std::to_string(l.size), l.media_type});
  std::cout << t.Render();
  std::cout << "Python packages: " << python.size() << "\n";
  if (!python.empty()) {
    Table pt({"NAME", "VERSION", "LOCATION"});
    for (const auto* p : python) pt.AddRow({p->name, p->version, p->location});
    std::cout << pt.Render();
  }
  std::cout << "Debian packages: " << dpkg << " (dpkg status)\n";
}

void RegisterImageCommands(CLI::App& app) {
  CLI::App* img = app.add_subcommand("image", "Container images in registries");
  img->require_subcommand(1);
  auto i = std::make_shared<ImageInspectFlags>();
  CLI::App* inspect = img->add_subcommand(
      "inspect",
      "Resolve REF against its registry: manifest digest, media type, size, layers, the Python "
      "packages its layers hold");
  inspect->add_option("REF", i->ref, "an image reference, e.g. 127.0.0.1:5000/volc/train:v2")
      ->required();
  inspect->add_option("--insecure-registry", i->insecure_registries,
                      "HOST[:PORT] reached over plain HTTP (repeatable; loopback always is)");
  inspect->add_option("--platform", i->platform, "OS/ARCHITECTURE to pick from an image index")
      ->capture_default_str();
  inspect->add_option("--username", i->username, "user name for the registry");
  inspect->add_flag("--password-stdin", i->password_stdin,
                    "read the registry password from the first line of stdin");
  AddOutput(inspect, &i->output, {"json"});
  Bind(inspect, i, &RunImageInspect);
}

}  // namespace rsl::cli
