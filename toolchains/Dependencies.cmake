# Finds the Debian-packaged libraries cairn builds on and exposes each as an
# imported target, the same way for the host and for the ARM sysroots that
# toolchains/install-deps.sh extracts (the toolchain files put those sysroots
# on CMAKE_FIND_ROOT_PATH). Headers are SYSTEM so -Werror stays ours.

function(cairn_import_library target header library)
  find_path(${target}_INCLUDE_DIR ${header} REQUIRED)
  find_library(${target}_LIBRARY NAMES ${library} REQUIRED)
  add_library(${target} UNKNOWN IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES
    IMPORTED_LOCATION "${${target}_LIBRARY}"
    INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${${target}_INCLUDE_DIR}"
    INTERFACE_INCLUDE_DIRECTORIES "${${target}_INCLUDE_DIR}")
endfunction()

find_package(Threads REQUIRED)

cairn_import_library(dep_sqlite3 sqlite3.h sqlite3)
cairn_import_library(dep_mbedcrypto mbedtls/sha256.h mbedcrypto)
cairn_import_library(dep_mbedx509 mbedtls/x509_crt.h mbedx509)
cairn_import_library(dep_mbedtls mbedtls/ssl.h mbedtls)
set_property(TARGET dep_mbedtls APPEND PROPERTY INTERFACE_LINK_LIBRARIES dep_mbedx509 dep_mbedcrypto)
cairn_import_library(dep_zstd zstd.h zstd)
cairn_import_library(dep_paho_c MQTTAsync.h paho-mqtt3as)
cairn_import_library(dep_paho_cpp mqtt/async_client.h paho-mqttpp3)
set_property(TARGET dep_paho_cpp APPEND PROPERTY INTERFACE_LINK_LIBRARIES dep_paho_c Threads::Threads)
cairn_import_library(dep_http_parser http_parser.h http_parser)
cairn_import_library(dep_zlib zlib.h z)

# toml++ (libtomlplusplus-dev), cairnd's config-file parser. Debian builds it
# as a shared library (libtomlplusplus3), but cairn uses it header-only
# (TOML_HEADER_ONLY=1): the parser compiles into the one file that includes
# it (firmware/cairnd/config_file.cc), so the ARM sysroots need the headers
# only and the gateway no extra library. Exceptions off: a parse error comes
# back as a value (toml::parse_result), as cairn's Status does.
find_path(dep_tomlplusplus_INCLUDE_DIR toml++/toml.h REQUIRED)
add_library(dep_tomlplusplus INTERFACE IMPORTED GLOBAL)
set_target_properties(dep_tomlplusplus PROPERTIES
  INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${dep_tomlplusplus_INCLUDE_DIR}"
  INTERFACE_INCLUDE_DIRECTORIES "${dep_tomlplusplus_INCLUDE_DIR}"
  INTERFACE_COMPILE_DEFINITIONS "TOML_HEADER_ONLY=1;TOML_EXCEPTIONS=0")

if(CAIRN_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()

# libpq, for the cloud-side ingest service's PostgreSQL sink (cairn-ingest)
# and the PostgreSQL test harness (tests/support/postgres_cluster). The ARM
# sysroots carry it too (toolchains/install-deps.sh), so cairn-ingest is
# packaged for every architecture; the harness and the tests that start a
# PostgreSQL server stay host-only (tests/CMakeLists.txt). Optional for a
# plain build (dep_libpq exists only when found); required when the host
# tests are built, whose integration tests start PostgreSQL. Debian keeps its
# header in postgresql/.
find_path(dep_libpq_INCLUDE_DIR libpq-fe.h PATH_SUFFIXES postgresql)
find_library(dep_libpq_LIBRARY NAMES pq)
if(dep_libpq_INCLUDE_DIR AND dep_libpq_LIBRARY)
  add_library(dep_libpq UNKNOWN IMPORTED GLOBAL)
  set_target_properties(dep_libpq PROPERTIES
    IMPORTED_LOCATION "${dep_libpq_LIBRARY}"
    INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${dep_libpq_INCLUDE_DIR}"
    INTERFACE_INCLUDE_DIRECTORIES "${dep_libpq_INCLUDE_DIR}")
elseif(CAIRN_BUILD_TESTS AND NOT CMAKE_CROSSCOMPILING)
  message(FATAL_ERROR "libpq (libpq-fe.h and libpq) not found; the integration tests need it")
endif()
