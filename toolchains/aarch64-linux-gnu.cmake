# Cross-compiles cairn for 64-bit ARM (Raspberry Pi 3/4/5 running arm64).
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CAIRN_TRIPLET aarch64-linux-gnu)
set(CAIRN_DEB_ARCH arm64)
set(CAIRN_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/cross-common.cmake)
