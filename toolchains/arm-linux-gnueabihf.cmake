# Cross-compiles cairn for 32-bit ARM hard-float (Raspberry Pi OS armhf, ARMv7).
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(CAIRN_TRIPLET arm-linux-gnueabihf)
set(CAIRN_DEB_ARCH armhf)
set(CAIRN_QEMU qemu-arm)
include(${CMAKE_CURRENT_LIST_DIR}/cross-common.cmake)
