// What cairnd says when its data directory cannot be opened: the problem
// names the directory and the failure, the remedy fits the cause.
#include "cairnd/storage_outage.h"

#include <gtest/gtest.h>

namespace cairn::cairnd {
namespace {

constexpr const char* kDir = "/var/lib/cairn";
constexpr const char* kUser = "cairn (uid 998)";

TEST(StorageOutageTest, ReadOnlyFileSystemAsksForARemount) {
  const EngineHolder::Outage outage = DescribeStorageOutage(
      Status::PermissionDenied("open /var/lib/cairn/LOCK: Read-only file system"), kDir, kUser);
  EXPECT_EQ(outage.problem,
            "cannot open data directory /var/lib/cairn: open /var/lib/cairn/LOCK: Read-only file system");
  EXPECT_EQ(
      outage.remedy.rfind("the file system holding /var/lib/cairn is read-only: remount it read-write", 0),
      0u)
      << outage.remedy;
}

TEST(StorageOutageTest, DamagedLogNamesTheRepairCommand) {
  const EngineHolder::Outage outage = DescribeStorageOutage(
      Status::Corruption("log segment /var/lib/cairn/log/000001.log offset 50: bad record checksum"), kDir,
      kUser);
  EXPECT_EQ(outage.remedy,
            "to mend the log, stop cairnd and run: cairnd --repair-log --data-dir /var/lib/cairn");
}

TEST(StorageOutageTest, PermissionDeniedNamesThePathAndTheUser) {
  const EngineHolder::Outage outage = DescribeStorageOutage(
      Status::PermissionDenied("open /var/lib/cairn/catalog.db: Permission denied"), kDir, kUser);
  EXPECT_EQ(
      outage.remedy.rfind("cairnd runs as cairn (uid 998), who may not use /var/lib/cairn/catalog.db: ", 0),
      0u)
      << outage.remedy;
}

TEST(StorageOutageTest, FullDiskAsksForSpaceAndACreateFailureKeepsItsWords) {
  const EngineHolder::Outage outage = DescribeStorageOutage(
      Status::ResourceExhausted(
          "cannot create data directory /var/lib/cairn: mkdir /var/lib/cairn: No space left "
          "on device"),
      kDir, kUser);
  EXPECT_EQ(outage.problem,
            "cannot create data directory /var/lib/cairn: mkdir /var/lib/cairn: No space left on "
            "device");
  EXPECT_EQ(outage.remedy,
            "free space on the file system holding /var/lib/cairn; cairnd tries again by itself");
}

TEST(StorageOutageTest, AnythingElseSaysWhereToLook) {
  const EngineHolder::Outage outage = DescribeStorageOutage(
      Status::IOError("read /var/lib/cairn/catalog.db: Input/output error"), kDir, kUser);
  EXPECT_EQ(outage.remedy.rfind("check /var/lib/cairn and the file system holding it", 0), 0u)
      << outage.remedy;
}

}  // namespace
}  // namespace cairn::cairnd
