// The ledger: the nodes, what is held on them, and an index that finds the least-loaded node
// that fits a request without visiting every node. Nodes of one shape (cpu, memory and the
// same devices) form a class; a request is checked against a class once (its capabilities,
// device memory and capacity), and inside a fitting class nodes are walked in load order,
// stopping at the first that fits now. A placement at 10,000 nodes of a few shapes costs
// a few set lookups, where sched::Place visits and explains every node.
//
// Reasons are built only when nothing fits, summarized by reason ("9750 nodes (a, b, c, ...):
// no GPU with capability low_latency"). The choice is the one sched::Place makes: least
// loaded (Load), ties to the first node in inventory order. Not thread-safe: one owner (the
// engine's loop thread).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sched/node.h"
#include "sched/placement.h"

namespace rsl::sched {

class Ledger {
 public:
  //! Replaces the inventory (nodes joining, leaving, changing state). With `keep_usage`, what
  //! this ledger holds on a node that is still there stays held (cpu, memory, devices); a
  //! node's own used_* figures are otherwise taken as given.
  void SetNodes(std::vector<Node> nodes, bool keep_usage);

  const std::vector<Node>& nodes() const { return nodes_; }
  //! The node named `name`, or null.
  const Node* Find(const std::string& name) const;

  //! The least-loaded Ready node that fits `req` now, with the free device indices to use
  //! (Placement::misfits stays empty: ask WhyNotNow). node == "" when nothing fits.
  Placement Choose(const Request& req) const;
  //! Holds what Choose chose; Release gives it back (unknown nodes are ignored: they left).
  void Hold(const std::string& node, const Request& req, const std::vector<int>& gpus);
  void Release(const std::string& node, const Request& req, const std::vector<int>& gpus);

  //! Why no node fits `req` now, summarized by reason; "" when one does.
  std::string WhyNotNow(const Request& req) const;
  //! The most cpu (millis) free on a Ready node; 0 when none is Ready.
  int64_t MaxFreeCpu() const;

 private:
  struct Class {
    const Node* shape = nullptr;               // a member: the class's capacity and devices
    std::set<std::pair<double, int>> by_load;  // Ready members: (Load, inventory index)
  };
  // Holds (sign +1) or gives back (-1) a request on `node`; unknown nodes are ignored.
  void Adjust(const std::string& node, const Request& req, const std::vector<int>& gpus, int sign);
  void Index(int i);    // enters node i into its class's load order (when Ready)
  void Unindex(int i);  // and takes it out

  std::vector<Node> nodes_;
  std::vector<std::vector<char>> busy_;  // per node, per device: held
  std::vector<int> class_of_;
  std::vector<double> load_;  // the Load key node i is indexed under
  std::vector<Class> classes_;
  std::unordered_map<std::string, int> by_name_;
  std::multiset<int64_t> free_cpu_;  // of Ready nodes
};

}  // namespace rsl::sched
