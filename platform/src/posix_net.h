// Private to platform/: TCP sockets for PosixEnv (env.h's network calls).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

namespace cairn::platform_internal {

Result<std::unique_ptr<TcpListener>> PosixListenTcp(const std::string& address, uint16_t port);

Result<std::unique_ptr<TcpConnection>> PosixConnectTcp(const std::string& address, uint16_t port,
                                                       int timeout_ms);

}  // namespace cairn::platform_internal
