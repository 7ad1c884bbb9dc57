#include "store/failing_store.h"

#include "base/codes.h"

namespace rsl::store {

void FailingStore::FailNthApply(int n, bool sticky) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_at_ = applies_ + n;
  sticky_ = sticky;
}

void FailingStore::Heal() {
  std::lock_guard<std::mutex> lock(mu_);
  fail_at_ = 0;
}

int FailingStore::applies() {
  std::lock_guard<std::mutex> lock(mu_);
  return applies_;
}

int FailingStore::failures() {
  std::lock_guard<std::mutex> lock(mu_);
  return failures_;
}

Status FailingStore::Apply(Batch* batch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    int n = ++applies_;
    if (fail_at_ > 0 && (n == fail_at_ || (n > fail_at_ && sticky_))) {
      ++failures_;
      return Error(codes::kIoError, "cannot commit the store transaction: disk I/O error")
          .Hint("injected by FailingStore");
    }
  }
  return StoreWrapper::Apply(batch);
}

}  // namespace rsl::store
