// EngineComponentTest: the ground a test of one engine component (Sealer,
// Checkpointer, Compactor, ...) stands on, built without an Engine: real
// period files and catalog in a temp dir through the Env's SQLite VFS, and
// when asked a log and a Checkpointer over them. Each test gets its own
// directory; the VFS name is registered once per name and reused.
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "cairn/platform/env.h"

#include "engine/catalog/catalog.h"
#include "engine/sealing/checkpointer.h"
#include "engine/sealing/period_files.h"
#include "log/log_writer.h"
#include "storage/env_vfs.h"
#include "test_dirs.h"

namespace cairn {

class EngineComponentTest : public ::testing::Test {
 protected:
  enum class With { kFilesAndCatalog, kLogAndCheckpointer };

  // `name` tells the component's tests apart: the temp dir starts with
  // "engine-<name>", the VFS is "cairn-test-<name>".
  EngineComponentTest(const std::string& name, With with)
      : dir_("engine-" + name), vfs_("cairn-test-" + name), with_(with) {}

  // Opens files_ and catalog_ (table directory "t"), and with
  // kLogAndCheckpointer log_ (id 1) and checkpointer_ over them.
  void SetUp() override {
    Env* env = Env::Default();
    ASSERT_TRUE(RegisterEnvVfs(env, vfs_).ok());
    ASSERT_TRUE(env->CreateDirs(dir_.PathOf("t")).ok());
    files_ = std::make_unique<PeriodFiles>(env, dir_.path(), vfs_, PeriodFiles::Options{});
    auto catalog = Catalog::Open(vfs_, dir_.PathOf("catalog.db"));
    ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
    catalog_ = std::move(catalog).value();
    if (with_ == With::kFilesAndCatalog) return;
    auto log = LogWriter::Open(env, dir_.PathOf("log"), 1, LogWriterOptions{});
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    log_ = std::move(log).value();
    checkpointer_ = std::make_unique<Checkpointer>(files_.get(), catalog_.get(), log_.get(), 1);
  }

  // Closes the log, which must close cleanly.
  void TearDown() override {
    if (log_) {
      EXPECT_TRUE(log_->Close().ok());
    }
  }

  ScopedTempDir dir_;
  const std::string vfs_;
  std::unique_ptr<PeriodFiles> files_;
  std::unique_ptr<Catalog> catalog_;
  std::unique_ptr<LogWriter> log_;
  std::unique_ptr<Checkpointer> checkpointer_;

 private:
  const With with_;
};

}  // namespace cairn
