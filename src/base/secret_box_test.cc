#include "base/secret_box.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>

#include "base/file.h"
#include "base/sqlite.h"
#include "base/test_util.h"

namespace rsl {
namespace {

TEST(SecretBoxTest, SealsOpensAndBindsTheContext) {
  testing::TempDir dir("secret-box");
  auto box = SecretBox::ForStateDir(dir.path());
  ASSERT_TRUE(box.ok()) << box.error().ToString();
  struct stat st {};
  ASSERT_EQ(::stat(SecretBox::KeyFilePath(dir.path()).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  std::string sealed = (*box)->Seal("hunter2", "secret:risk/db");
  EXPECT_TRUE(SecretBox::IsSealed(sealed));
  EXPECT_EQ(sealed.find("hunter2"), std::string::npos);
  EXPECT_NE(sealed, (*box)->Seal("hunter2", "secret:risk/db"));  // a fresh nonce each time
  EXPECT_EQ(*(*box)->Open(sealed, "secret:risk/db"), "hunter2");
  EXPECT_EQ(*(*box)->Open((*box)->Seal("", "c"), "c"), "");

  auto moved = (*box)->Open(sealed, "secret:ads/db");  // copied into another row
  ASSERT_FALSE(moved.ok());
  EXPECT_EQ(moved.error().code, "IO_ERROR");
  std::string altered = sealed;
  altered[altered.size() - 1] = altered.back() == '0' ? '1' : '0';
  EXPECT_FALSE((*box)->Open(altered, "secret:risk/db").ok());
  EXPECT_EQ((*box)->Open(altered, "secret:risk/db").error().message.find("hunter2"),
            std::string::npos);

  // The same state directory loads the same key.
  auto again = SecretBox::ForStateDir(dir.path());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*(*again)->Open(sealed, "secret:risk/db"), "hunter2");
}

TEST(SecretBoxTest, ARotatedRingOpensOldValuesAndAWrongKeyIsNamed) {
  testing::TempDir dir("secret-ring");
  auto box = SecretBox::ForStateDir(dir.path());
  ASSERT_TRUE(box.ok());
  std::string old_value = (*box)->Seal("v1", "c");
  std::string path = SecretBox::KeyFilePath(dir.path());
  ASSERT_TRUE(SecretBox::AddNewKey(path).ok());
  auto ring = SecretBox::Load(path);
  ASSERT_TRUE(ring.ok());
  EXPECT_NE((*ring)->current_key_id(), (*box)->current_key_id());
  EXPECT_EQ(*(*ring)->Open(old_value, "c"), "v1");
  EXPECT_FALSE((*ring)->SealedWithCurrentKey(old_value));
  ASSERT_TRUE(SecretBox::DropOldKeys(path).ok());
  auto only_new = SecretBox::Load(path);
  ASSERT_TRUE(only_new.ok());
  auto lost = (*only_new)->Open(old_value, "c");
  ASSERT_FALSE(lost.ok());
  EXPECT_NE(lost.error().message.find("which the secret key file does not hold"),
            std::string::npos);

  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  auto open_to_all = SecretBox::Load(path);
  ASSERT_FALSE(open_to_all.ok());
  EXPECT_EQ(open_to_all.error().hint, "chmod 600 " + path);
}

TEST(SecretBoxTest, KeyFileFromTheEnvironmentMustExist) {
  testing::TempDir dir("secret-env");
  ::setenv(SecretBox::kKeyFileEnv, dir.Sub("elsewhere.key").c_str(), 1);
  auto missing = SecretBox::ForStateDir(dir.path());
  ::unsetenv(SecretBox::kKeyFileEnv);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, "IO_ERROR");
  EXPECT_FALSE(PathExists(dir.Sub("elsewhere.key")));
}

TEST(SecretBoxTest, ResealColumnSealsClearRowsAndLeavesNoTraceInTheFiles) {
  testing::TempDir dir("secret-reseal");
  auto db = Db::Open(dir.Sub("rsl.db"));
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->Exec("CREATE TABLE t (name TEXT, v TEXT)").ok());
  ASSERT_TRUE((*db)->Run("INSERT INTO t VALUES ('a', 'plain-value-123'), ('b', '')").ok());
  auto box = SecretBox::ForStateDir(dir.path());
  ASSERT_TRUE(box.ok());
  auto n = ResealColumn(**db, **box, "t", "v", "'t:' || name", "v != ''");
  ASSERT_TRUE(n.ok()) << n.error().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(*ResealColumn(**db, **box, "t", "v", "'t:' || name", "v != ''"), 0);
  auto v = (*db)->First("SELECT v FROM t WHERE name='a'", [](const Stmt& s) { return s.Text(0); });
  ASSERT_TRUE(v.ok() && v->has_value());
  EXPECT_EQ(*(*box)->Open(**v, "t:a"), "plain-value-123");
  db->reset();
  for (const char* f : {"rsl.db", "rsl.db-wal", "rsl.db-shm"}) {
    auto bytes = ReadFileIfExists(dir.Sub(f), 1 << 30);
    ASSERT_TRUE(bytes.ok());
    if (bytes->has_value()) {
      EXPECT_EQ((*bytes)->find("plain-value-123"), std::string::npos) << f;
    }
  }
}

}  // namespace
}  // namespace rsl
