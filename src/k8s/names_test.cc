#include "k8s/names.h"

#include <gtest/gtest.h>

namespace rsl::k8s {
namespace {

TEST(K8sNames, ValidNamesAreKept) {
  EXPECT_EQ(DnsLabel("fraud-detection-v2"), "fraud-detection-v2");
  EXPECT_EQ(LabelValue("Train_Model.v2"), "Train_Model.v2");
  EXPECT_EQ(LabelValue(""), "");
}

TEST(K8sNames, InvalidNamesAreMappedAndHashed) {
  std::string a = DnsLabel("Fraud_Detection.v2");
  EXPECT_TRUE(IsDnsLabel(a)) << a;
  EXPECT_EQ(a.rfind("fraud-detection-v2-", 0), 0u) << a;
  // Two names that map to the same readable part stay apart by their hash.
  EXPECT_NE(DnsLabel("a_b"), DnsLabel("a.b"));
  EXPECT_TRUE(IsDnsLabel(DnsLabel("___")));
  EXPECT_TRUE(IsDnsLabel(DnsLabel("")));
}

TEST(K8sNames, LongNamesAreCutToTheLimit) {
  std::string long_name(200, 'a');
  std::string d = DnsLabel(long_name);
  EXPECT_EQ(d.size(), kMaxLabelName);
  EXPECT_TRUE(IsDnsLabel(d));
  EXPECT_NE(d, DnsLabel(long_name + "b"));
  std::string v = LabelValue(std::string(100, 'x') + "-");
  EXPECT_TRUE(IsLabelValue(v)) << v;
  EXPECT_LE(DnsLabel("some-run-name-that-goes-on", 20).size(), 20u);
  EXPECT_TRUE(IsDnsLabel(DnsLabel("ends-with-dash-----------------------", 20)));
}

TEST(K8sNames, HashedLabelsAlwaysCarryTheKeysHash) {
  // A readable part that is valid still gets the hash: two keys with equal readable parts
  // ("a-b" + "c" and "a" + "b-c") stay apart.
  std::string ab_c = HashedDnsLabel("rsl-a-b-c", "a-b/c");
  std::string a_bc = HashedDnsLabel("rsl-a-b-c", "a/b-c");
  EXPECT_NE(ab_c, a_bc);
  EXPECT_EQ(ab_c.rfind("rsl-a-b-c-", 0), 0u) << ab_c;
  EXPECT_EQ(ab_c.size(), std::string("rsl-a-b-c-").size() + 8);
  EXPECT_TRUE(IsDnsLabel(ab_c)) << ab_c;
  std::string long_one = HashedDnsLabel("rsl-" + std::string(100, 'N') + "_x", "k");
  EXPECT_EQ(long_one.size(), kMaxLabelName);
  EXPECT_TRUE(IsDnsLabel(long_one)) << long_one;
  EXPECT_EQ(HashedDnsLabel("rsl-x", "k"), HashedDnsLabel("rsl-x", "k"));  // deterministic
}

TEST(K8sNames, ValidityRules) {
  EXPECT_FALSE(IsDnsLabel("-a"));
  EXPECT_FALSE(IsDnsLabel("a-"));
  EXPECT_FALSE(IsDnsLabel("A"));
  EXPECT_FALSE(IsDnsLabel("a.b"));
  EXPECT_FALSE(IsDnsLabel(std::string(64, 'a')));
  EXPECT_TRUE(IsLabelValue("A.b_c-D"));
  EXPECT_FALSE(IsLabelValue("a/b"));
  EXPECT_FALSE(IsLabelValue("_a"));
}

}  // namespace
}  // namespace rsl::k8s
