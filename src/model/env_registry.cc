#include "model/env_registry.h"

#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "base/env.h"
#include "base/file.h"
#include "base/strings.h"

namespace rsl::model {
namespace {

using nlohmann::json;

constexpr size_t kMaxImageName = 255;

const std::vector<std::string> kMigrationList = {
    R"(CREATE TABLE model_environments (
         image TEXT PRIMARY KEY,
         kind TEXT NOT NULL,
         python TEXT NOT NULL,
         root TEXT NOT NULL,
         entrypoint_json TEXT NOT NULL,
         inspection_json TEXT NOT NULL,
         digest TEXT NOT NULL,
         registered_at_ms INTEGER NOT NULL))",
    R"(CREATE TABLE model_artifacts (
         id INTEGER PRIMARY KEY AUTOINCREMENT,
         name TEXT NOT NULL,
         namespace TEXT NOT NULL,
         version TEXT NOT NULL,
         framework TEXT NOT NULL,
         step TEXT NOT NULL,
         fingerprint TEXT NOT NULL,
         uri TEXT NOT NULL,
         staging_dir TEXT NOT NULL,
         state TEXT NOT NULL,
         run_id TEXT NOT NULL,
         workload_id TEXT NOT NULL,
         spec_digest TEXT NOT NULL,
         image TEXT NOT NULL,
         environment_digest TEXT NOT NULL,
         record_json TEXT NOT NULL,
         created_at_ms INTEGER NOT NULL))",
    "CREATE INDEX model_artifacts_name ON model_artifacts(name, version)",
    "CREATE INDEX model_artifacts_run ON model_artifacts(run_id)",
};

}  // namespace

// Shared with the artifact store: both keep their tables under the component "model".
const std::vector<std::string>& ModelMigrations() { return kMigrationList; }

namespace {

json PackageToJson(const Package& p) {
  return {{"name", p.name},
          {"normalized", p.normalized},
          {"version", p.version},
          {"kind", p.kind},
          {"location", p.location}};
}

json InspectionToJson(const Inspection& ins) {
  json packages = json::array();
  for (const auto& p : ins.packages) packages.push_back(PackageToJson(p));
  return {{"interpreter", ins.interpreter},
          {"pythonVersion", ins.python_version},
          {"searchPath", ins.search_path},
          {"packages", packages},
          {"digest", ins.digest}};
}

Inspection InspectionFromJson(const json& j) {
  Inspection ins;
  ins.interpreter = j.value("interpreter", "");
  ins.python_version = j.value("pythonVersion", "");
  ins.search_path = j.value("searchPath", std::vector<std::string>{});
  ins.digest = j.value("digest", "");
  if (j.contains("packages") && j["packages"].is_array()) {
    for (const auto& pj : j["packages"]) {
      Package p;
      p.name = pj.value("name", "");
      p.normalized = pj.value("normalized", "");
      p.version = pj.value("version", "");
      p.kind = pj.value("kind", "");
      p.location = pj.value("location", "");
      ins.packages.push_back(std::move(p));
    }
  }
  return ins;
}

Environment FromRow(const Stmt& st) {
  Environment env;
  std::string entrypoint_json, inspection_json, digest;  // the digest is inside the inspection
  st.Into(&env.image, &env.kind, &env.python, &env.root, &entrypoint_json, &inspection_json,
          &digest, &env.registered_at_ms);
  auto ep = json::parse(entrypoint_json, nullptr, false);
  if (ep.is_array()) env.entrypoint = ep.get<std::vector<std::string>>();
  auto ins = json::parse(inspection_json, nullptr, false);
  if (ins.is_object()) env.inspection = InspectionFromJson(ins);
  return env;
}

constexpr char kSelect[] =
    "SELECT image, kind, python, root, entrypoint_json, inspection_json, digest, "
    "registered_at_ms FROM model_environments";

}  // namespace

Status ValidateImageName(const std::string& image) {
  if (image.empty() || image.size() > kMaxImageName) {
    return Error(codes::kInvalidArgument,
                 "image name must be 1.." + std::to_string(kMaxImageName) + " characters")
        .Value(image)
        .Hint("e.g. volc/train-pytorch:v2.1");
  }
  for (unsigned char c : image) {
    if (c <= ' ' || c == 0x7f || c == '"' || c == '\'' || c == '\\') {
      return Error(codes::kInvalidArgument,
                   "image name " + Quote(image) +
                       " contains whitespace, a quote or a control character")
          .Value(image)
          .Hint("e.g. volc/train-pytorch:v2.1");
    }
  }
  return Status::Ok();
}

Result<std::vector<std::string>> SplitCommandLine(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote == '\'') {
      if (c == '\'')
        quote = 0;
      else
        word.push_back(c);
      continue;
    }
    if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else if (c == '\\' && i + 1 < text.size() &&
                 (text[i + 1] == '"' || text[i + 1] == '\\' || text[i + 1] == '$')) {
        word.push_back(text[++i]);
      } else {
        word.push_back(c);
      }
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '\\' && i + 1 < text.size()) {
      word.push_back(text[++i]);
    } else {
      word.push_back(c);
    }
  }
  if (quote != 0) {
    return Error(codes::kInvalidArgument, std::string("unterminated ") + quote + " in command line")
        .Value(text)
        .Hint("close the quote");
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

Result<std::unique_ptr<EnvRegistry>> EnvRegistry::Open(const std::string& state_dir) {
  auto db = OpenStateDb(state_dir, "model", ModelMigrations());
  if (!db.ok()) return db.error();
  return std::make_unique<EnvRegistry>(std::move(db).value());
}

Status EnvRegistry::Migrate() { return db_->Migrate("model", ModelMigrations()); }

Result<Inspection> EnvRegistry::InspectNow(const Environment& env) {
  if (env.kind == "root") return InspectRoot(env.root);
  return InspectPython(env.python);
}

Result<Environment> EnvRegistry::Register(const RegisterRequest& request) {
  RSL_RETURN_IF_ERROR(ValidateImageName(request.image));
  if (request.python.empty() == request.root.empty()) {
    return Error(codes::kInvalidArgument, "give exactly one of --python PATH and --root DIR")
        .Hint("seedctl env register IMAGE --python /usr/bin/python3");
  }
  Environment env;
  env.image = request.image;
  env.kind = request.python.empty() ? "root" : "python";
  env.python = request.python;
  env.root = request.root;
  if (!request.entrypoint.empty()) {
    auto ep = SplitCommandLine(request.entrypoint);
    if (!ep.ok()) return ep.error();
    env.entrypoint = std::move(ep).value();
  }
  auto ins = InspectNow(env);
  if (!ins.ok()) return ins.error();
  env.inspection = std::move(ins).value();
  env.registered_at_ms = Env::Default()->NowMs();

  std::lock_guard<std::mutex> lock(mu_);
  RSL_RETURN_IF_ERROR(db_->Run(
      "INSERT OR REPLACE INTO model_environments (image, kind, python, root, entrypoint_json, "
      "inspection_json, digest, registered_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      env.image, env.kind, env.python, env.root, json(env.entrypoint).dump(),
      InspectionToJson(env.inspection).dump(), env.inspection.digest, env.registered_at_ms));
  return env;
}

Result<Environment> EnvRegistry::Get(const std::string& image) {
  std::lock_guard<std::mutex> lock(mu_);
  auto found = db_->First(std::string(kSelect) + " WHERE image = ?", FromRow, image);
  if (!found.ok()) return found.error();
  if (found->has_value()) return std::move(**found);
  auto all = db_->Rows("SELECT image FROM model_environments ORDER BY image",
                       [](const Stmt& row) { return row.Text(0); });
  std::vector<std::string> known = all.ok() ? std::move(*all) : std::vector<std::string>();
  return Error(codes::kImageNotFound, "image " + Quote(image) + " is not registered")
      .Value(image)
      .Hint(ClosestHint(image, known,
                        "register it: seedctl env register " + image + " --python PATH"));
}

Result<std::vector<Environment>> EnvRegistry::List() {
  std::lock_guard<std::mutex> lock(mu_);
  return db_->Rows(std::string(kSelect) + " ORDER BY image", FromRow);
}

Status EnvRegistry::Remove(const std::string& image) {
  std::lock_guard<std::mutex> lock(mu_);
  RSL_RETURN_IF_ERROR(db_->Run("DELETE FROM model_environments WHERE image = ?", image));
  if (db_->Changes() == 0) {
    return Error(codes::kImageNotFound, "image " + Quote(image) + " is not registered")
        .Value(image);
  }
  return Status::Ok();
}

}  // namespace rsl::model
