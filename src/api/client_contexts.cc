#include "api/client_contexts.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <map>

#include "api/client_internal.h"
#include "base/codes.h"
#include "base/env.h"
#include "base/file.h"
#include "base/strings.h"
#include "spec/reader.h"
#include "spec/yaml_load.h"

namespace rsl::api {

namespace {

// The keys of one context, in the order they are written.
const std::vector<std::string>& ContextKeys() {
  static const std::vector<std::string> kKeys = {
      "name",      "server",   "tokenFile", "certificateAuthority", "clientCertificate",
      "clientKey", "namespace"};
  return kKeys;
}

std::string Dir(const std::string& file) {
  size_t slash = file.rfind('/');
  if (slash == std::string::npos) return "";
  return slash == 0 ? "/" : file.substr(0, slash);
}

// `path` as the file at `config` means it: "~/x" in $HOME, "x" beside the file.
std::string Resolve(const std::string& path, const std::string& config) {
  if (path.empty() || path[0] == '/') return path;
  if (StartsWith(path, "~/") && !EnvVar("HOME").empty()) return EnvVar("HOME") + path.substr(1);
  std::string dir = Dir(config);
  if (dir.empty()) return path;
  return (dir == "/" ? "" : dir) + "/" + path;
}

Status DecodeContext(spec::Reader& r, const YAML::Node& node, const std::string& path, Context* c,
                     Errors* errors) {
  if (!r.Map(node, path, ContextKeys()) || !errors->empty()) return errors->front();
  std::string* fields[] = {&c->name,
                           &c->server,
                           &c->token_file,
                           &c->certificate_authority,
                           &c->client_certificate,
                           &c->client_key,
                           &c->namespace_};
  for (size_t i = 0; i < ContextKeys().size(); ++i) {
    const std::string& key = ContextKeys()[i];
    if (!spec::Reader::Has(node, key.c_str())) continue;
    auto v = r.String(node[key], path + "." + key);
    if (!v) return errors->front();
    *fields[i] = *v;
  }
  if (c->name.empty()) {
    r.Missing(node, path + ".name", "every context has a name: `- name: prod`");
    return errors->front();
  }
  return Status::Ok();
}

}  // namespace

const Context* ContextsFile::Find(const std::string& name) const {
  for (const auto& c : contexts) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string ContextsFile::Names() const {
  std::vector<std::string> names;
  for (const auto& c : contexts) names.push_back(c.name);
  return names.empty() ? "none" : Join(names, ", ");
}

std::string UserConfigFile(const char* override_var, const std::string& relative) {
  std::string p = EnvVar(override_var);
  if (!p.empty()) return p;
  std::string xdg = EnvVar("XDG_CONFIG_HOME");
  if (!xdg.empty()) return xdg + "/" + relative;
  std::string home = EnvVar("HOME");
  if (!home.empty()) return home + "/.config/" + relative;
  return "";
}

std::string ContextsPath() { return UserConfigFile("RSL_CONFIG", "rsl/config.yaml"); }

Result<ContextsFile> ParseContexts(const std::string& yaml, const std::string& file) {
  Result<YAML::Node> root = spec::LoadYaml(yaml, file);
  if (!root.ok()) {
    Error e = root.error();
    e.code = codes::kConfigInvalid;
    return e;
  }
  ContextsFile out;
  if (root->IsNull()) return out;
  std::map<std::string, SourcePos> positions;
  Errors errors;
  spec::Reader r(file, &positions, &errors);
  r.UseCode(codes::kConfigInvalid);
  if (!r.Map(*root, "", {"currentContext", "contexts"}) || !errors.empty()) {
    return errors.front();
  }
  if (spec::Reader::Has(*root, "currentContext")) {
    auto v = r.String((*root)["currentContext"], "currentContext");
    if (!v) return errors.front();
    out.current_context = *v;
  }
  if (spec::Reader::Has(*root, "contexts")) {
    const YAML::Node list = (*root)["contexts"];
    if (!r.Seq(list, "contexts", "write a list: `- name: prod` then its keys")) {
      return errors.front();
    }
    for (size_t i = 0; i < list.size(); ++i) {
      std::string path = "contexts[" + std::to_string(i) + "]";
      Context c;
      Status st = DecodeContext(r, list[i], path, &c, &errors);
      if (!st.ok()) return st.error();
      if (out.Find(c.name)) {
        return r.Fail(list[i]["name"], path + ".name", "a second context named " + Quote(c.name),
                      "give every context its own name");
      }
      out.contexts.push_back(std::move(c));
    }
  }
  return out;
}

Result<ContextsFile> LoadContexts(const std::string& path) {
  if (path.empty() || !PathExists(path)) return ContextsFile{};
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return text.error();
  return ParseContexts(*text, path);
}

std::string RenderContexts(const ContextsFile& file) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  if (!file.current_context.empty()) {
    out << YAML::Key << "currentContext" << YAML::Value << file.current_context;
  }
  out << YAML::Key << "contexts" << YAML::Value << YAML::BeginSeq;
  for (const auto& c : file.contexts) {
    const std::string* fields[] = {
        &c.name,       &c.server,    &c.token_file, &c.certificate_authority, &c.client_certificate,
        &c.client_key, &c.namespace_};
    out << YAML::BeginMap;
    for (size_t i = 0; i < ContextKeys().size(); ++i) {
      if (fields[i]->empty()) continue;
      out << YAML::Key << ContextKeys()[i] << YAML::Value << *fields[i];
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return "# seedctl contexts (seedctl config --help)\n" + std::string(out.c_str()) + "\n";
}

Status SaveContexts(const ContextsFile& file, const std::string& path) {
  if (path.empty()) {
    return Error(codes::kInvalidArgument, "no place for the contexts file")
        .Hint("set HOME, XDG_CONFIG_HOME or RSL_CONFIG, or pass --config FILE");
  }
  std::string dir = Dir(path);
  if (!dir.empty() && !PathExists(dir)) RSL_RETURN_IF_ERROR(MakePrivateDir(dir));
  rsl::Env* env = rsl::Env::Default();
  // Written beside it, made private, then renamed over it: a reader sees the old file or the
  // new one, never a mix, and never a readable one.
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  Status st = env->WriteFile(tmp, RenderContexts(file), /*sync=*/true);
  if (st.ok()) st = env->Chmod(tmp, 0600);
  if (st.ok()) st = env->Rename(tmp, path);
  if (!st.ok()) {
    (void)env->RemoveAll(tmp);
    return st;
  }
  return env->SyncDir(dir.empty() ? "." : dir);
}

Result<Context> CurrentContext(const ContextsFile& file, const std::string& path) {
  if (file.current_context.empty()) return Context{};
  const Context* c = file.Find(file.current_context);
  if (!c) {
    return Error(codes::kNotFound, "no context named " + Quote(file.current_context))
        .At(SourcePos{path, 0, 0})
        .Path("currentContext")
        .Value(file.current_context)
        .Hint("known contexts: " + file.Names() + "; seedctl config use-context NAME");
  }
  Context out = *c;
  for (std::string* p :
       {&out.token_file, &out.certificate_authority, &out.client_certificate, &out.client_key}) {
    *p = Resolve(*p, path);
  }
  return out;
}

Result<std::string> ReadContextToken(const Context& context) {
  auto fail = [&](const std::string& why) {
    return Error(codes::kInvalidArgument, "context " + Quote(context.name) + ": token file " + why)
        .Path("tokenFile")
        .Value(context.token_file)
        .Hint("put the token in that file (one line), or seedctl config set-context " +
              context.name + " --token-file FILE");
  };
  if (!PathExists(context.token_file)) return fail(Quote(context.token_file) + " does not exist");
  Result<std::string> text = ReadFile(context.token_file);
  if (!text.ok()) return fail("cannot be read: " + text.error().message);
  std::string token(Trim(*text));
  if (token.empty()) return fail(Quote(context.token_file) + " is empty");
  return token;
}

}  // namespace rsl::api
