#include "serve/haproxy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "base/test_util.h"

namespace rsl::serve {
namespace {

TEST(HaproxyTest, ParsesShowStat) {
  const std::string csv =
      "# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,"
      "wredis,status,weight,act,bck,chkfail,chkdown,lastchg,downtime,qlimit,pid,iid,sid,"
      "throttle,lbtot,tracked,type,rate,rate_lim,rate_max,check_status,check_code,"
      "check_duration,hrsp_1xx,hrsp_2xx,hrsp_3xx,hrsp_4xx,hrsp_5xx\n"
      "fe,FRONTEND,,,2,5,4096,120,0,0,0,0,0,,,,,OPEN,,,,,,,,,1,2,0,,,,0,0,0,3,,,,0,118,0,0,2\n"
      "be,r0-1,0,0,1,3,,60,0,0,,0,,0,0,0,0,UP,1,1,0,,,,,,1,3,1,,60,,2,0,,3,,,,0,59,0,0,1\n"
      "be,BACKEND,0,0,1,3,410,120,0,0,0,0,,0,0,0,0,UP,1,1,0,,,,,,1,3,0,,120,,1,0,,3,,,,0,118,0,"
      "0,2\n";
  auto rows = ParseShowStat(csv);
  ASSERT_TRUE(rows.ok()) << rows.error().ToString();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0].proxy, "fe");
  EXPECT_EQ((*rows)[0].server, "FRONTEND");
  EXPECT_EQ((*rows)[0].stot, 120);
  EXPECT_EQ((*rows)[0].hrsp_5xx, 2);
  EXPECT_EQ((*rows)[1].server, "r0-1");
  EXPECT_EQ((*rows)[1].scur, 1);
  EXPECT_EQ((*rows)[1].status, "UP");
}

TEST(HaproxyTest, ShowStatWithoutItsHeaderIsAnError) {
  auto rows = ParseShowStat("fe,FRONTEND,,,2\n");
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.error().code, "INTERNAL");
}

TEST(HaproxyTest, ConfigHasOneFrontendOneEmptyBackendAndTheAdminSocket) {
  std::string text = ProxyConfigText({"127.0.0.1", 18080, "/tmp/x.sock"});
  EXPECT_NE(text.find("stats socket /tmp/x.sock mode 600 level admin"), std::string::npos);
  EXPECT_NE(text.find("frontend fe\n  bind 127.0.0.1:18080\n"), std::string::npos);
  EXPECT_NE(text.find("backend be\n  balance leastconn\n"), std::string::npos);
  EXPECT_EQ(text.find("\n  server "), std::string::npos);  // servers come through the runtime API
}

TEST(HaproxyTest, MissingExecutableIsRefusedWithItsCode) {
  rsl::testing::TempDir dir;
  auto p = HaproxyProcess::Start("/nonexistent/haproxy", dir.path() + "/p",
                                 {"127.0.0.1", 1, dir.path() + "/s"});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, "SERVING_PROXY_MISSING");
}

// The real HAProxy: servers added, enabled, drained and deleted through the runtime API.
TEST(HaproxyTest, RuntimeApiAddsDrainsAndDeletesServers) {
  if (access(kDefaultHaproxy, X_OK) != 0) GTEST_SKIP() << "haproxy is not installed";
  rsl::testing::TempDir dir;
  auto port = FreePort();
  ASSERT_TRUE(port.ok());
  char sock_dir[] = "/tmp/rsl-serve-test-XXXXXX";
  ASSERT_NE(mkdtemp(sock_dir), nullptr);
  std::string sock = std::string(sock_dir) + "/admin.sock";
  auto p =
      HaproxyProcess::Start(kDefaultHaproxy, dir.path() + "/proxy", {"127.0.0.1", *port, sock});
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  HaproxyRuntime& rt = (*p)->runtime();
  ASSERT_TRUE(rt.AddServer("r0-1", "127.0.0.1", 1).ok());
  ASSERT_TRUE(rt.SetState("r0-1", "ready").ok());
  auto stat = rt.ShowStat();
  ASSERT_TRUE(stat.ok()) << stat.error().ToString();
  bool found = false;
  for (const auto& row : *stat) found = found || (row.proxy == "be" && row.server == "r0-1");
  EXPECT_TRUE(found);
  EXPECT_TRUE(rt.SetState("r0-1", "drain").ok());
  EXPECT_TRUE(rt.SetState("r0-1", "maint").ok());
  EXPECT_TRUE(rt.DelServer("r0-1").ok());
  EXPECT_FALSE(rt.SetState("r0-1", "ready").ok());  // gone
  EXPECT_FALSE(PortFree(*port));                    // the frontend listens
  (*p)->Stop();
  EXPECT_TRUE(PortFree(*port));  // and is gone with HAProxy
  rmdir(sock_dir);
}

}  // namespace
}  // namespace rsl::serve
