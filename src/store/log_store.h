// The store layer's own: the store with a transition log in front of SQLite
// (StoreOptions::transition_log) and the lock that makes its process the store's one writer.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "store/store.h"

namespace rsl::store {

//! <state_dir>/store.lock: held exclusively by a store with a transition log for its life
//! (Env::LockFile), shared by every other store's Apply (SharedStoreLock).
std::string StoreOwnerLockPath(const std::string& state_dir);

//! The shared side of store.lock, for a store without a transition log: its file is opened
//! once, then taken and let go around each Apply. Not thread-safe: the store's writer mutex
//! serializes it (two holders on one open file would share one lock).
class SharedStoreLock {
 public:
  explicit SharedStoreLock(std::string path) : path_(std::move(path)) {}
  SharedStoreLock(const SharedStoreLock&) = delete;
  SharedStoreLock& operator=(const SharedStoreLock&) = delete;
  ~SharedStoreLock();
  //! Without waiting. Errors: CONFLICT (a store with a log owns it), IO_ERROR.
  Status Take();
  void Release();

 private:
  std::string path_;
  int fd_ = -1;
};

//! The SQLite store alone; `owned`: its process holds store.lock (no per-Apply lock).
Result<std::unique_ptr<Store>> OpenSqliteStoreAs(const std::string& state_dir,
                                                 const StoreOptions& options, bool owned);

//! A transition log left by an owner that died (records in <state_dir>/translog/) is applied
//! to SQLite, unless its owner is alive: opening the store without a log must not lose them.
Status ApplyLeftoverLog(const std::string& state_dir, const StoreOptions& options);

//! The store with a transition log: takes the owner lock, applies what the log holds past
//! what SQLite has, then starts the thread that writes SQLite's tables from the log.
Result<std::unique_ptr<Store>> OpenLogStore(const std::string& state_dir,
                                            const StoreOptions& options);

//! OpenLogStore whose indexer writes through wrap(the SQLite store) (tests: a FailingStore,
//! SQLite refusing the log's rows as a full disk would).
using WrapStoreFn = std::function<std::unique_ptr<Store>(Store* sqlite)>;
Result<std::unique_ptr<Store>> OpenLogStoreWrapped(const std::string& state_dir,
                                                   const StoreOptions& options,
                                                   const WrapStoreFn& wrap);

}  // namespace rsl::store
