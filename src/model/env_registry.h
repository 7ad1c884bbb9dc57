// The environment registry: what an image name means on the local and Slurm backends (a
// Python interpreter or a root directory, optionally an entrypoint) and a snapshot of what it
// contains. Kept in the state directory's database (component "model", table
// model_environments), so `seedctl env ...`, `seedctl run` and the controller share it.
//
// Threading: one registry may be used from several threads (calls are serialised).
// Several processes may open the same state directory (SQLite WAL).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/sqlite.h"
#include "base/status.h"
#include "model/env_inspect.h"

namespace rsl::model {

struct Environment {
  std::string image;
  std::string kind;                     //!< "python" or "root"
  std::string python;                   //!< interpreter path (kind python)
  std::string root;                     //!< root directory (kind root)
  std::vector<std::string> entrypoint;  //!< argv a step without `command` runs
  Inspection inspection;                //!< the snapshot taken when registered
  int64_t registered_at_ms = 0;         //!< unix time
};

struct RegisterRequest {
  std::string image;
  std::string python;  //!< exactly one of python / root
  std::string root;
  std::string entrypoint;  //!< a command line, split like a shell would ("" = none)
};

class EnvRegistry {
 public:
  //! Opens <state_dir>/rsl.db (creating the directory) and applies the model migrations.
  static Result<std::unique_ptr<EnvRegistry>> Open(const std::string& state_dir);
  explicit EnvRegistry(std::unique_ptr<Db> db) : db_(std::move(db)) {}

  //! Inspects the environment now and records it (replacing an earlier registration of the
  //! same image). Errors: INVALID_ARGUMENT (bad image name, both/neither of python and root,
  //! bad entrypoint), IO_ERROR (inspection failed).
  Result<Environment> Register(const RegisterRequest& request);
  //! IMAGE_NOT_FOUND (with a "did you mean" hint) when the image is not registered.
  Result<Environment> Get(const std::string& image);
  //! Every registration, sorted by image.
  Result<std::vector<Environment>> List();
  //! IMAGE_NOT_FOUND when absent.
  Status Remove(const std::string& image);

  //! Inspects a registered environment again, as it is now (admission uses this: the
  //! check is against what the environment really has, not what it had when registered).
  static Result<Inspection> InspectNow(const Environment& env);

 private:
  Status Migrate();
  std::mutex mu_;
  std::unique_ptr<Db> db_;  // GUARDED_BY(mu_)
};

//! Splits a command line like a POSIX shell does for words and quotes ('...', "...", \x);
//! no expansions. INVALID_ARGUMENT for an unterminated quote.
Result<std::vector<std::string>> SplitCommandLine(const std::string& text);

//! The "model" component's migrations (environments and artifacts share them).
const std::vector<std::string>& ModelMigrations();

//! Image names: 1..255 printable characters without whitespace or quotes.
Status ValidateImageName(const std::string& image);

}  // namespace rsl::model
