// What cairnd tells the operator when its data directory cannot be opened
// (daemon.h): the problem, named with the directory and the failure, and
// the remedy for the causes a gateway meets at boot.
//
//   read-only file system  "the file system holding DIR is read-only: remount it read-write ..."
//   damaged log            "stop cairnd and run: cairnd --repair-log --data-dir DIR"
//   permission denied      the path refused and the user cairnd runs as
//   no space left          free space on the file system holding DIR
//   anything else          check DIR; cairnd tries again by itself
//
// Busy (another cairnd holds the lock) is no outage: cairnd exits then.
#pragma once

#include <string>

#include "cairn/platform/status.h"
#include "cairn/shell/engine_holder.h"

namespace cairn::cairnd {

// `failure` is what creating the directory or opening the engine on
// `data_dir` returned (not OK, not Busy); `user` names the user cairnd runs
// as (CurrentUserDescription).
EngineHolder::Outage DescribeStorageOutage(const Status& failure, const std::string& data_dir,
                                           const std::string& user);

}  // namespace cairn::cairnd
