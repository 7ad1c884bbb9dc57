// The migrations of the store's tables (component "store" of <state-dir>/rsl.db).
#pragma once

#include <string>
#include <vector>

namespace rsl::store {

//! Every migration of the store's schema, oldest first.
const std::vector<std::string>& SqliteStoreMigrations();

}  // namespace rsl::store
