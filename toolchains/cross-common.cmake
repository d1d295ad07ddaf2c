# Shared part of the ARM toolchain files. Expects CAIRN_TRIPLET (e.g.
# aarch64-linux-gnu), CAIRN_DEB_ARCH (arm64|armhf), CAIRN_QEMU (qemu-aarch64)
# and CMAKE_SYSTEM_PROCESSOR to be set by the including file.
#
# Compilers, libc and libstdc++ come from Debian's crossbuild-essential-*
# under /usr/<triplet>; the libraries cairn links come from Debian's
# <arch> packages extracted by toolchains/install-deps.sh into
# ${CAIRN_SYSROOT_BASE}/<arch>. Test binaries run under qemu-user, so a plain
# `ctest` in a cross build directory runs them emulated.

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_C_COMPILER ${CAIRN_TRIPLET}-gcc)
set(CMAKE_CXX_COMPILER ${CAIRN_TRIPLET}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${CAIRN_TRIPLET})

if(DEFINED ENV{CAIRN_SYSROOT_BASE})
  set(CAIRN_SYSROOT_BASE "$ENV{CAIRN_SYSROOT_BASE}")
else()
  set(CAIRN_SYSROOT_BASE /opt/cairn/sysroot)
endif()
set(CAIRN_LIB_SYSROOT "${CAIRN_SYSROOT_BASE}/${CAIRN_DEB_ARCH}" CACHE PATH "Extracted Debian ${CAIRN_DEB_ARCH} libraries")
if(NOT EXISTS "${CAIRN_LIB_SYSROOT}/usr/include/sqlite3.h")
  message(FATAL_ERROR "No ${CAIRN_DEB_ARCH} sysroot at ${CAIRN_LIB_SYSROOT}: run toolchains/install-deps.sh as root")
endif()

set(CMAKE_FIND_ROOT_PATH "${CAIRN_LIB_SYSROOT}" /usr/${CAIRN_TRIPLET})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Shared libraries of the sysroot depend on each other (paho -> libssl): the
# linker must find those too, and the test binaries must find them at run
# time under qemu (qemu falls back to host paths not present under -L).
set(_cairn_libdir "${CAIRN_LIB_SYSROOT}/usr/lib/${CAIRN_TRIPLET}")
string(APPEND CMAKE_EXE_LINKER_FLAGS_INIT " -Wl,-rpath-link,${_cairn_libdir}")
string(APPEND CMAKE_SHARED_LINKER_FLAGS_INIT " -Wl,-rpath-link,${_cairn_libdir}")
set(CMAKE_BUILD_RPATH "${_cairn_libdir}")

find_program(CAIRN_QEMU_PROGRAM ${CAIRN_QEMU} REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR "${CAIRN_QEMU_PROGRAM};-L;/usr/${CAIRN_TRIPLET}")
