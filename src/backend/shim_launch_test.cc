// ParseLaunch: the attempt a "launch" message of the shim protocol asks for.
#include "backend/shim_launch.h"

#include <gtest/gtest.h>

namespace rsl::shim {
namespace {

using nlohmann::json;

TEST(ShimLaunchTest, ReadsEveryField) {
  json msg = {{"op", "launch"},
              {"id", "r1/train/1"},
              {"argv", {"python", "train.py"}},
              {"env", {"A=1", "PATH=/bin"}},
              {"workdir", "/runs/r1/train/1/work"},
              {"make_dirs", {"/runs/r1/out"}},
              {"log", "/runs/r1/train/1.log"},
              {"exit_file", "/runs/r1/attempts/1.exit"},
              {"memory", 1048576},
              {"cpu_millis", 500},
              {"v2_cg", "/sys/fs/cgroup/rsl/a"},
              {"mem_cg", "/m"},
              {"cpu_cg", "/c"},
              {"grace_ms", 250},
              {"secrets", {"hunter2"}},
              {"uid", 1234},
              {"gid", 99},
              {"userns", 1},
              {"hide", {"/state"}},
              {"ro", {"/runs/r1/prep/out"}}};
  auto a = ParseLaunch(msg);
  EXPECT_EQ(a->id, "r1/train/1");
  EXPECT_EQ(a->argv, (std::vector<std::string>{"python", "train.py"}));
  EXPECT_EQ(a->env, (std::vector<std::string>{"A=1", "PATH=/bin"}));
  EXPECT_EQ(a->workdir, "/runs/r1/train/1/work");
  EXPECT_EQ(a->make_dirs, (std::vector<std::string>{"/runs/r1/out"}));
  EXPECT_EQ(a->log_path, "/runs/r1/train/1.log");
  EXPECT_EQ(a->exit_file, "/runs/r1/attempts/1.exit");
  EXPECT_EQ(a->memory, 1048576);
  EXPECT_EQ(a->cpu_millis, 500);
  EXPECT_EQ(a->v2_cg, "/sys/fs/cgroup/rsl/a");
  EXPECT_EQ(a->mem_cg, "/m");
  EXPECT_EQ(a->cpu_cg, "/c");
  EXPECT_EQ(a->grace_ms, 250);
  EXPECT_EQ(a->secrets, (std::vector<std::string>{"hunter2"}));
  EXPECT_EQ(a->uid, 1234);
  EXPECT_EQ(a->gid, 99);
  EXPECT_TRUE(a->userns);
  EXPECT_EQ(a->hide, (std::vector<std::string>{"/state"}));
  EXPECT_EQ(a->ro, (std::vector<std::string>{"/runs/r1/prep/out"}));
  // Nothing of the running attempt is set by parsing.
  EXPECT_EQ(a->owner, -1);
  EXPECT_EQ(a->pid, -1);
  EXPECT_EQ(a->mechanism, "none");
}

TEST(ShimLaunchTest, MissingFieldsKeepTheirDefaults) {
  auto a = ParseLaunch(json{{"op", "launch"}, {"id", "x"}});
  EXPECT_EQ(a->id, "x");
  EXPECT_TRUE(a->argv.empty());
  EXPECT_TRUE(a->workdir.empty());
  EXPECT_EQ(a->memory, 0);
  EXPECT_EQ(a->cpu_millis, 0);
  EXPECT_EQ(a->grace_ms, kDefaultGraceMs);
  EXPECT_EQ(a->uid, -1);
  EXPECT_EQ(a->gid, -1);
  EXPECT_FALSE(a->userns);
}

TEST(ShimLaunchTest, ListEntriesThatAreNotStringsAreDropped) {
  auto a = ParseLaunch(json{{"id", "x"}, {"argv", {"echo", 1, "hi", nullptr}}, {"env", "A=1"}});
  EXPECT_EQ(a->argv, (std::vector<std::string>{"echo", "hi"}));
  EXPECT_TRUE(a->env.empty());  // not a list at all
}

TEST(ShimLaunchTest, NeverRoot) {
  // uid 0 runs as the supervisor's own user, not as root.
  auto root = ParseLaunch(json{{"id", "x"}, {"uid", 0}, {"gid", 0}});
  EXPECT_EQ(root->uid, -1);
  EXPECT_EQ(root->gid, -1);
  // A uid without a gid is not half-applied.
  auto no_gid = ParseLaunch(json{{"id", "x"}, {"uid", 1234}});
  EXPECT_EQ(no_gid->uid, -1);
  EXPECT_EQ(no_gid->gid, -1);
}

}  // namespace
}  // namespace rsl::shim
