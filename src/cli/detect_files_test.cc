// The parsers of Hadoop's *-site.xml and the AWS CLI's INI files: what they read, their
// errors word for word, and every truncation of a good file (no crash, an error or a subset).
#include "cli/detect_files.h"

#include <gtest/gtest.h>

namespace rsl::cli {
namespace {

const char kHdfsSite[] = R"(<?xml version="1.0" encoding="UTF-8"?>
<?xml-stylesheet type="text/xsl" href="configuration.xsl"?>
<!-- HA: two namenodes -->
<configuration>
  <property>
    <name>dfs.nameservices</name>
    <value>ns1</value>
  </property>
  <property>
    <name>dfs.ha.namenodes.ns1</name><value>nn1, nn2</value>
    <description>the <b>two</b> namenodes</description>
  </property>
  <property><name>dfs.namenode.rpc-address.ns1.nn1</name><value>
      nn1.example.com:8020
  </value><final>true</final></property>
  <property><name>escaped</name><value>a &lt; b &amp; c</value></property>
  <property><name>escaped</name><value>later wins</value></property>
  <property><name>empty</name><value/></property>
</configuration>
)";

TEST(HadoopSiteTest, ReadsPropertiesAsHadoopDoes) {
  auto props = ParseHadoopSite(kHdfsSite, "hdfs-site.xml");
  ASSERT_TRUE(props.ok()) << props.error().ToString();
  EXPECT_EQ(props->at("dfs.nameservices"), "ns1");
  EXPECT_EQ(props->at("dfs.ha.namenodes.ns1"), "nn1, nn2");
  EXPECT_EQ(props->at("dfs.namenode.rpc-address.ns1.nn1"), "nn1.example.com:8020");
  EXPECT_EQ(props->at("escaped"), "later wins");
  EXPECT_EQ(props->at("empty"), "");
  EXPECT_EQ(props->size(), 5u);
}

TEST(HadoopSiteTest, ErrorsHaveTheirPlace) {
  auto bad = ParseHadoopSite("<configuration>\n  <property><name>a</name>\n</configuration>\n",
                             "/etc/hadoop/conf/core-site.xml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().ToString(),
            "/etc/hadoop/conf/core-site.xml:3:3: CONFIG_INVALID: malformed XML: mismatched tag "
            "(fix or remove the file; Hadoop would not read it either)");
  auto root = ParseHadoopSite("<?xml version=\"1.0\"?>\n<beans><x/></beans>", "f.xml");
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.error().ToString(),
            "f.xml:2:1: CONFIG_INVALID: the top element is <beans>, not <configuration> (is this "
            "a Hadoop *-site.xml file?)");
  auto empty = ParseHadoopSite("", "e.xml");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().ToString(),
            "e.xml:1:1: CONFIG_INVALID: malformed XML: no element found (fix or remove the file; "
            "Hadoop would not read it either)");
  auto garbage = ParseHadoopSite(std::string("\x00\xff\xfe<<>>\x01", 8), "g.xml");
  EXPECT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.error().code, "CONFIG_INVALID");
}

TEST(HadoopSiteTest, EntityExpansionIsRefusedNotFollowed) {
  // A "billion laughs" document: expat's amplification limit stops it.
  std::string xml = "<?xml version=\"1.0\"?>\n<!DOCTYPE c [\n<!ENTITY a \"aaaaaaaaaaaaaaaa\">\n";
  std::string prev = "a";
  for (int i = 0; i < 12; ++i) {
    std::string name = "e" + std::to_string(i);
    xml += "<!ENTITY " + name + " \"";
    for (int j = 0; j < 16; ++j) xml += "&" + prev + ";";
    xml += "\">\n";
    prev = name;
  }
  xml += "]>\n<configuration><property><name>x</name><value>&" + prev +
         ";</value></property></configuration>\n";
  auto r = ParseHadoopSite(xml, "laughs.xml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "CONFIG_INVALID");
}

TEST(HadoopSiteTest, EveryTruncationIsAnErrorOrASubset) {
  const std::string xml = kHdfsSite;
  // Up to the last '>': what follows the root element is only its newline.
  for (size_t n = 0; n <= xml.rfind('>'); ++n) {
    auto r = ParseHadoopSite(xml.substr(0, n), "t.xml");
    if (r.ok()) {
      ADD_FAILURE() << "a truncated document parsed at " << n;
      continue;
    }
    EXPECT_EQ(r.error().code, "CONFIG_INVALID") << n;
    EXPECT_EQ(r.error().pos.file, "t.xml") << n;
    EXPECT_GT(r.error().pos.line, 0) << n;
  }
}

const char kAwsConfig[] = R"(# AWS CLI config
[default]
region = us-east-1

[profile minio]
region=eu-west-1
endpoint_url = http://127.0.0.1:9000
s3 =
  addressing_style = path
  endpoint_url = http://10.0.0.5:9000
; a comment
[sso-session corp]
sso_region = us-east-1
)";

TEST(AwsIniTest, ReadsSectionsKeysAndNestedBlocks) {
  auto ini = ParseAwsIni(kAwsConfig, "config");
  ASSERT_TRUE(ini.ok()) << ini.error().ToString();
  EXPECT_EQ(ini->at("default").at("region"), "us-east-1");
  const auto& minio = ini->at("profile minio");
  EXPECT_EQ(minio.at("region"), "eu-west-1");
  EXPECT_EQ(minio.at("endpoint_url"), "http://127.0.0.1:9000");
  EXPECT_EQ(minio.at("s3.endpoint_url"), "http://10.0.0.5:9000");
  EXPECT_EQ(minio.at("s3.addressing_style"), "path");
  EXPECT_EQ(minio.count("s3"), 0u);
  EXPECT_EQ(ini->at("sso-session corp").at("sso_region"), "us-east-1");
}

TEST(AwsIniTest, ErrorsHaveTheirPlaceAndNeverTheLine) {
  auto bad = ParseAwsIni("[default]\naws_access_key_id = AKIA\nwJalrXUtnFEMI/K7MDENG\n",
                         "/home/u/.aws/credentials");
  ASSERT_FALSE(bad.ok());
  // The line may be a secret pasted without its key: it is not repeated.
  EXPECT_EQ(bad.error().ToString(),
            "/home/u/.aws/credentials:3:1: CONFIG_INVALID: not a [section] or a key = value line "
            "(AWS config lines read key = value)");
  auto before = ParseAwsIni("region = x\n[default]\n", "c");
  ASSERT_FALSE(before.ok());
  EXPECT_EQ(before.error().ToString(),
            "c:1:1: CONFIG_INVALID: a key before any [section] (start the file with [default] or "
            "[profile NAME])");
  auto open = ParseAwsIni("[default\n", "c");
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.error().ToString(),
            "c:1:1: CONFIG_INVALID: a section header without its closing ']' (write [name] or "
            "[profile name])");
}

TEST(AwsIniTest, EveryTruncationParsesOrFailsCleanly) {
  const std::string text = kAwsConfig;
  for (size_t n = 0; n <= text.size(); ++n) {
    auto r = ParseAwsIni(text.substr(0, n), "c");
    if (!r.ok()) {
      EXPECT_EQ(r.error().code, "CONFIG_INVALID") << n;
    }
  }
  auto garbage = ParseAwsIni(std::string("\x00\xff[\n=\n", 6), "g");
  EXPECT_FALSE(garbage.ok());
}

}  // namespace
}  // namespace rsl::cli
