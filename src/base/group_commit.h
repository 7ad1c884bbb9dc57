// Group commit, as leveldb's write queue: callers that need an item written durably queue
// up; the caller at the head of the queue writes its own item and those queued behind it in
// ONE transaction (one fsync), then hands each of them the transaction's status. Items that
// arrive meanwhile go in the next group, written by the next head. A lone caller writes at
// once. A failed transaction fails every item in it: none is half acknowledged.
//
// Threading: Commit is called from many threads; it returns once the caller's item is
// written (or its transaction failed).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "base/status.h"

namespace rsl {

template <typename Item>
class GroupCommit {
 public:
  //! At most `max_group` items in one transaction.
  explicit GroupCommit(size_t max_group) : max_group_(max_group) {}

  //! Queues `item` and returns its transaction's status. The head of the queue forms the
  //! group: `take(item)` is asked of each item in queue order, the head's own first, and a
  //! later item joins only while it says true (it may count what the group holds); then
  //! `write(group)` writes the group in one transaction.
  template <typename Take, typename Write>
  Status Commit(Item* item, Take&& take, Write&& write) {
    Waiter me{item, Status::Ok(), false, {}};
    std::unique_lock<std::mutex> lock(mu_);
    queue_.push_back(&me);
    while (!me.done && &me != queue_.front()) me.cv.wait(lock);
    if (me.done) return me.status;  // a head wrote it
    hold_cv_.wait(lock, [&] { return !hold_; });
    std::vector<Item*> group;
    for (Waiter* w : queue_) {
      if (!group.empty() && group.size() >= max_group_) break;
      if (!take(*w->item) && !group.empty()) break;
      group.push_back(w->item);
    }
    lock.unlock();  // items queue up behind this transaction meanwhile
    Status s = write(group);
    lock.lock();
    if (s.ok()) ++commits_;
    for (size_t i = 0; i < group.size(); ++i) {
      Waiter* w = queue_.front();  // the group is the head of the queue, in order
      queue_.pop_front();
      w->status = s;
      w->done = true;
      if (w != &me) w->cv.notify_one();
    }
    if (!queue_.empty()) queue_.front()->cv.notify_one();  // the next head
    return s;
  }

  //! Transactions written so far, and items waiting for theirs now.
  int64_t commits() {
    std::lock_guard<std::mutex> lock(mu_);
    return commits_;
  }
  int64_t queued() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int64_t>(queue_.size());
  }
  //! Test only: while held, the head waits before it forms its group (so that a test decides
  //! which items share a transaction).
  void TEST_Hold(bool hold) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      hold_ = hold;
    }
    hold_cv_.notify_all();
  }

 private:
  struct Waiter {
    Item* item;
    Status status;
    bool done;  // GUARDED_BY(mu_)
    std::condition_variable cv;
  };

  const size_t max_group_;
  std::mutex mu_;
  std::condition_variable hold_cv_;
  std::deque<Waiter*> queue_;  // GUARDED_BY(mu_): the head is writing
  int64_t commits_ = 0;        // GUARDED_BY(mu_)
  bool hold_ = false;          // GUARDED_BY(mu_)
};

}  // namespace rsl
