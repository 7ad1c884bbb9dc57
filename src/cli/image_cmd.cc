#include "cli/image_cmd.h"

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "cli/cli.h"
#include "cli/table.h"
#include "cli/workload_format.h"
#include "image/cache.h"
#include "image/reference.h"
#include "image/registry.h"
#include "model/image_inspect.h"

namespace rsl::cli {
namespace {

using nlohmann::json;

json DescriptorJson(const image::Descriptor& d) {
  return {{"digest", d.digest}, {"size", d.size}, {"mediaType", d.media_type}};
}

image::RegistryOptions RegistryOptionsFor(const ImageInspectFlags& f, const image::Reference& ref) {
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
  image::RegistryClient client(RegistryOptionsFor(f, *ref));
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

namespace {

nlohmann::json CachedJson(const image::CachedImage& c) {
  return {{"digest", c.digest},           {"reference", c.reference}, {"bytes", c.bytes},
          {"lastUsedMs", c.last_used_ms}, {"inUse", c.in_use},        {"dir", c.dir}};
}

void PrintCached(const std::vector<image::CachedImage>& list) {
  Table t({"DIGEST", "REFERENCE", "SIZE", "LAST USED (ms)", "IN USE"});
  for (const auto& c : list) {
    t.AddRow({c.digest, c.reference, std::to_string(c.bytes), std::to_string(c.last_used_ms),
              c.in_use ? "yes" : "no"});
  }
  std::cout << t.Render();
}

}  // namespace

void RunImageList(const ImageCacheFlags& flags) {
  image::BundleCache cache(flags.state_dir.empty() ? DefaultStateDir() : flags.state_dir);
  auto list = cache.List();
  if (!list.ok()) FailWith(list.error());
  if (flags.output == "json") {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& c : *list) out.push_back(CachedJson(c));
    std::cout << out.dump(2) << "\n";
    return;
  }
  int64_t total = 0;
  for (const auto& c : *list) total += c.bytes;
  std::cout << "Cache: " << cache.dir() << " (" << list->size() << " bundle"
            << (list->size() == 1 ? "" : "s") << ", " << total << " bytes)\n";
  PrintCached(*list);
}

void RunImagePrune(const ImageCacheFlags& flags) {
  if (flags.all == (flags.keep_bytes >= 0)) {
    FailWith(
        Error(codes::kInvalidArgument, "image prune needs exactly one of --all and --keep-bytes N")
            .Hint("seedctl image prune --all, or --keep-bytes 1073741824"));
  }
  image::BundleCache cache(flags.state_dir.empty() ? DefaultStateDir() : flags.state_dir);
  auto r = cache.Prune(flags.all ? 0 : flags.keep_bytes);
  if (!r.ok()) FailWith(r.error());
  if (flags.output == "json") {
    nlohmann::json removed = nlohmann::json::array();
    for (const auto& c : r->removed) removed.push_back(CachedJson(c));
    std::cout << nlohmann::json{{"removed", removed},
                                {"freedBytes", r->freed_bytes},
                                {"keptBytes", r->kept_bytes}}
                     .dump(2)
              << "\n";
    return;
  }
  for (const auto& c : r->removed)
    std::cout << "removed " << c.digest << " (" << c.bytes << " bytes)\n";
  std::cout << "freed " << r->freed_bytes << " bytes; " << r->kept_bytes
            << " bytes kept (bundles in use are never removed)\n";
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

  auto l = std::make_shared<ImageCacheFlags>();
  CLI::App* ls = img->add_subcommand(
      "ls", "The local backend's image cache: unpacked bundles, size, last use, in use");
  AddStateDir(ls, &l->state_dir);
  AddOutput(ls, &l->output, {"json"});
  Bind(ls, l, &RunImageList);

  auto p = std::make_shared<ImageCacheFlags>();
  CLI::App* prune = img->add_subcommand(
      "prune", "Evict least recently used bundles not in use from the local image cache");
  AddStateDir(prune, &p->state_dir);
  prune->add_flag("--all", p->all, "every bundle that is not in use");
  prune->add_option("--keep-bytes", p->keep_bytes, "evict until at most N bytes remain");
  AddOutput(prune, &p->output, {"json"});
  Bind(prune, p, &RunImagePrune);
}

}  // namespace rsl::cli
