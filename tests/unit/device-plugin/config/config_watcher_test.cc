// The config room without the daemon: the diff deciding which pools a new config keeps, updates
// in place or restarts; the file's load; which inotify events name it (a real inotify fd).
#include "device-plugin/config/config_watcher.h"
#include "support/temp_dir.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace rdmak8s::dp {
namespace {

namespace fs = std::filesystem;

PoolConfig Pool(const std::string& name, PoolMode mode, int capacity = kAutoCapacity) {
  PoolConfig p;
  p.name = name;
  p.mode = mode;
  p.capacity = capacity;
  return p;
}

PluginConfig Config(std::vector<PoolConfig> pools, const std::string& prefix = "rdma") {
  PluginConfig c;
  c.resource_prefix = prefix;
  c.pools = std::move(pools);
  return c;
}

std::vector<std::string> Names(const std::vector<PoolConfig>& pools) {
  std::vector<std::string> out;
  for (const auto& p : pools) out.push_back(p.name);
  return out;
}

TEST(DiffConfigTest, SameConfigKeepsEveryPool) {
  PluginConfig c = Config({Pool("a", PoolMode::kShared, 2), Pool("b", PoolMode::kExclusive)});
  ConfigDiff d = DiffConfig(c, c);
  EXPECT_TRUE(d.stop.empty());
  EXPECT_TRUE(d.updated.empty());
  EXPECT_TRUE(d.start.empty());
}

// kubelet marks a resource's devices Unhealthy when its stream ends: a capacity or selector change
// must not restart the pool.
TEST(DiffConfigTest, SettingsChangeKeepingResourceAndModeIsAnUpdateInPlace) {
  PluginConfig before = Config({Pool("a", PoolMode::kShared, 2), Pool("b", PoolMode::kExclusive)});
  PluginConfig after = before;
  after.pools[0].capacity = 3;
  after.pools[1].selectors.vendors = {"15b3"};
  ConfigDiff d = DiffConfig(before, after);
  EXPECT_TRUE(d.stop.empty());
  EXPECT_TRUE(d.start.empty());
  ASSERT_EQ(d.updated.size(), 2u);
  EXPECT_EQ(d.updated.at("a").capacity, 3);
  EXPECT_EQ(d.updated.at("b").selectors.vendors, std::vector<std::string>{"15b3"});
}

TEST(DiffConfigTest, ModeChangeRestartsThePool) {
  PluginConfig before = Config({Pool("a", PoolMode::kShared), Pool("b", PoolMode::kShared)});
  PluginConfig after = Config({Pool("a", PoolMode::kExclusive), Pool("b", PoolMode::kShared)});
  ConfigDiff d = DiffConfig(before, after);
  EXPECT_EQ(d.stop, std::vector<std::string>{"a"});
  EXPECT_EQ(Names(d.start), std::vector<std::string>{"a"});
  EXPECT_EQ(d.start[0].mode, PoolMode::kExclusive);
  EXPECT_TRUE(d.updated.empty());
}

TEST(DiffConfigTest, ResourcePrefixChangeRestartsEveryPool) {
  PluginConfig before = Config({Pool("b", PoolMode::kShared), Pool("a", PoolMode::kShared)});
  PluginConfig after = Config({Pool("b", PoolMode::kShared), Pool("a", PoolMode::kShared)}, "nic");
  ConfigDiff d = DiffConfig(before, after);
  EXPECT_EQ(d.stop, (std::vector<std::string>{"a", "b"})) << "in name order";
  EXPECT_EQ(Names(d.start), (std::vector<std::string>{"b", "a"})) << "in the config's order";
  EXPECT_TRUE(d.updated.empty());
}

TEST(DiffConfigTest, RemovedPoolsStopAndAddedPoolsStart) {
  PluginConfig before = Config({Pool("vfs", PoolMode::kExclusive), Pool("pf", PoolMode::kShared)});
  PluginConfig after = Config({Pool("sf", PoolMode::kExclusive), Pool("pf", PoolMode::kShared)});
  ConfigDiff d = DiffConfig(before, after);
  EXPECT_EQ(d.stop, std::vector<std::string>{"vfs"});
  EXPECT_EQ(Names(d.start), std::vector<std::string>{"sf"});
  EXPECT_TRUE(d.updated.empty()) << "pf is kept as it is";
}

class ConfigWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = rdmak8s::testing::NewTempDir();
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    if (ifd_ >= 0) close(ifd_);
    fs::remove_all(dir_);
  }
  void Write(const std::string& json) { std::ofstream(path()) << json; }
  std::string path() const { return dir_ + "/config.json"; }

  std::string dir_;
  int ifd_ = -1;
};

TEST_F(ConfigWatcherTest, WithoutAFileTheDefaultSharedPoolIsLoadedAndNothingReloads) {
  ConfigWatcher w("", /*cdi=*/false);
  EXPECT_FALSE(w.has_file());
  auto c = w.Load();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, DefaultConfig());
  ASSERT_EQ(c->pools.size(), 1u);
  EXPECT_EQ(c->pools[0].name, "shared");
  auto r = w.Reload(Config({}));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST_F(ConfigWatcherTest, ReloadTellsUnchangedFromChangedAndRejectsAnInvalidFile) {
  Write(R"({"pools": [{"name": "p", "selectors": {}}]})");
  ConfigWatcher w(path(), /*cdi=*/false);
  auto running = w.Load();
  ASSERT_TRUE(running.ok()) << running.status().ToString();
  auto same = w.Reload(*running);
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->has_value());

  Write(R"({"pools": [{"name": "p", "capacity": 3, "selectors": {}}]})");
  auto changed = w.Reload(*running);
  ASSERT_TRUE(changed.ok());
  ASSERT_TRUE(changed->has_value());
  EXPECT_EQ((*changed)->pools[0].capacity, 3);

  Write(R"({"pools": []})");
  auto bad = w.Reload(*running);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "config " + path() + ": $.pools: must name at least one pool");
}

TEST_F(ConfigWatcherTest, WithCdiAPoolNameThatIsNoCdiClassIsRejectedNamingTheFile) {
  Write(R"({"pools": [{"name": "9p", "selectors": {}}]})");
  EXPECT_TRUE(ConfigWatcher(path(), /*cdi=*/false).Load().ok());
  auto c = ConfigWatcher(path(), /*cdi=*/true).Load();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "config " + path() + ": $.pools[0].name: \"9p\" cannot be a CDI class (--cdi): it must start with a letter");
}

TEST_F(ConfigWatcherTest, ConcernsOnlyTheFileAndTheConfigMapDataLinkInItsDirectory) {
  ConfigWatcher w(path(), /*cdi=*/false);
  EXPECT_FALSE(w.Concerns(1, IN_CLOSE_WRITE, "config.json")) << "not watching yet";
  ifd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ASSERT_GE(ifd_, 0);
  // Another watch of the same directory first (the kubelet dir holding the config): the same wd.
  int other = inotify_add_watch(ifd_, dir_.c_str(), IN_CREATE);
  ASSERT_GE(other, 0);
  ASSERT_TRUE(w.Watch(ifd_).ok());
  EXPECT_TRUE(w.Concerns(other, IN_CLOSE_WRITE, "config.json"));
  EXPECT_TRUE(w.Concerns(other, IN_MOVED_TO, "config.json"));
  EXPECT_TRUE(w.Concerns(other, IN_MOVED_TO, "..data"));
  EXPECT_FALSE(w.Concerns(other, IN_CREATE, "config.json")) << "created empty: the write follows";
  EXPECT_FALSE(w.Concerns(other, IN_CLOSE_WRITE, "other.json"));
  EXPECT_FALSE(w.Concerns(other + 1, IN_CLOSE_WRITE, "config.json")) << "another directory";

  // IN_MASK_ADD kept the other watch's mask: a file created there is still reported.
  std::ofstream(dir_ + "/kubelet.sock") << "";
  alignas(inotify_event) char buf[4096];
  ssize_t n = read(ifd_, buf, sizeof(buf));
  ASSERT_GT(n, 0);
  EXPECT_NE(reinterpret_cast<inotify_event*>(buf)->mask & IN_CREATE, 0u);
}

TEST_F(ConfigWatcherTest, WatchOfAMissingDirectoryIsAnErrorNamingIt) {
  ConfigWatcher w(dir_ + "/nowhere/config.json", /*cdi=*/false);
  ifd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  Status s = w.Watch(ifd_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("inotify watch " + dir_ + "/nowhere"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace rdmak8s::dp
