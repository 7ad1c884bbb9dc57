#include "runtime/rotate_key.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "base/codes.h"
#include "base/file.h"
#include "base/secret_box.h"
#include "data/catalog.h"
#include "store/store.h"

namespace rsl::runtime {

void UseSecretKeyFile(const std::string& path) {
  ::setenv(SecretBox::kKeyFileEnv, path.c_str(), 1);
}

Result<KeyRotation> RotateSecretKey(const std::string& state_dir) {
  if (!IsDirectory(state_dir)) {
    return Error(codes::kNotFound, "no state directory " + state_dir)
        .Hint("--state-dir names the directory the controller runs on");
  }
  // The lock rsl-controller holds while it runs (runtime.cc), held here for the rotation.
  std::string lock_path = state_dir + "/controller.lock";
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return OsError(codes::kIoError, "cannot open", lock_path, errno);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return Error(codes::kConflict, "an rsl-controller is running on state directory " + state_dir)
        .Hint("stop it, rotate the key, start it again");
  }
  auto rotate = [&]() -> Result<KeyRotation> {
    KeyRotation r;
    r.key_file = SecretBox::KeyFilePath(state_dir);
    auto before = SecretBox::ForStateDir(state_dir);  // creates the ring if there is none
    if (!before.ok()) return before.error();
    r.old_key_id = (*before)->current_key_id();
    RSL_RETURN_IF_ERROR(SecretBox::AddNewKey(r.key_file));
    // Opening re-seals what the current (new) key did not seal.
    auto store = store::OpenSqliteStore(state_dir);
    if (!store.ok()) return store.error();
    store->reset();
    auto catalog = data::Catalog::Open(state_dir);
    if (!catalog.ok()) return catalog.error();
    catalog->reset();
    RSL_RETURN_IF_ERROR(SecretBox::DropOldKeys(r.key_file));
    auto after = SecretBox::Load(r.key_file);
    if (!after.ok()) return after.error();
    r.new_key_id = (*after)->current_key_id();
    return r;
  };
  Result<KeyRotation> result = rotate();
  ::close(fd);
  return result;
}

}  // namespace rsl::runtime
