# Fails when an #include points up the layers (README "Architecture"):
#
#   firmware -> transport -> core -> platform, and inside transport
#   text <- shell <- http;  text <- mqtt;  text <- sync envelope;
#   sync (agent, commands) <- envelope, mqtt, shell;
#   cloud <- envelope, mqtt, text, core (it runs beside the broker, not on a
#   gateway, and nothing of the gateway includes it).
#
# Usage: cmake -DSOURCE_DIR=<repo> [-DEXTRA_FILE=<file> -DEXTRA_LAYER=<layer>]
#              -P check_layering.cmake
# EXTRA_FILE is scanned as if it lived in EXTRA_LAYER (the test that proves the
# check can fail uses it). Each offending line is printed as file:line.

cmake_minimum_required(VERSION 3.25)

# What each layer may include, itself included.
set(ALLOWED_platform platform)
set(ALLOWED_core core platform)
set(ALLOWED_text text core platform)
set(ALLOWED_shell shell text core platform)
set(ALLOWED_http http shell text core platform)
set(ALLOWED_mqtt mqtt text core platform)
set(ALLOWED_envelope envelope text core platform)
set(ALLOWED_sync sync envelope mqtt shell text core platform)
set(ALLOWED_cloud cloud envelope mqtt text core platform)
set(ALLOWED_firmware firmware http sync envelope mqtt shell text core platform)

# The layer a file belongs to, from its path relative to SOURCE_DIR.
function(layer_of_file path out)
  set(layer "")
  if(path MATCHES "^platform/")
    set(layer platform)
  elseif(path MATCHES "^core/")
    set(layer core)
  elseif(path MATCHES "^transport/sync/(src/envelope[^/]*|include/cairn/sync/sync_envelope\\.h)$")
    set(layer envelope)
  elseif(path MATCHES "^transport/(text|shell|http|mqtt|sync)/")
    set(layer ${CMAKE_MATCH_1})
  elseif(path MATCHES "^cloud/")
    set(layer cloud)
  elseif(path MATCHES "^firmware/")
    set(layer firmware)
  endif()
  set(${out} "${layer}" PARENT_SCOPE)
endfunction()

# The layer an include names; empty for system headers. A quoted include that
# names no public header is the including target's own private header, except
# the daemon's ("cairnd/..."), which is firmware's.
function(layer_of_include include own out)
  set(layer "${own}")
  if(include MATCHES "^cairn/platform/")
    set(layer platform)
  elseif(include MATCHES "^cairn/core/")
    set(layer core)
  elseif(include STREQUAL "cairn/sync/sync_envelope.h")
    set(layer envelope)
  elseif(include MATCHES "^cairn/(text|shell|http|mqtt|sync)/")
    set(layer ${CMAKE_MATCH_1})
  elseif(include MATCHES "^cairn/ingest/")
    set(layer cloud)
  elseif(include MATCHES "^cairnd/")
    set(layer firmware)
  endif()
  set(${out} "${layer}" PARENT_SCOPE)
endfunction()

set(violations 0)
function(check_file file relative layer)
  file(READ "${file}" text)
  # One list element per line: neutralise what CMake lists treat specially.
  string(REPLACE "\\" "/" text "${text}")
  string(REPLACE ";" "," text "${text}")
  string(REPLACE "[" "(" text "${text}")
  string(REPLACE "]" ")" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(number 0)
  set(count ${violations})
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"")
      set(include "${CMAKE_MATCH_1}")
      layer_of_include("${include}" "${layer}" target)
      if(NOT target IN_LIST ALLOWED_${layer})
        message("${relative}:${number}: ${layer} includes ${target} (\"${include}\")")
        math(EXPR count "${count} + 1")
      endif()
    endif()
  endforeach()
  set(violations ${count} PARENT_SCOPE)
endfunction()

file(GLOB_RECURSE files RELATIVE "${SOURCE_DIR}" LIST_DIRECTORIES false
     "${SOURCE_DIR}/platform/*" "${SOURCE_DIR}/core/*" "${SOURCE_DIR}/transport/*"
     "${SOURCE_DIR}/cloud/*" "${SOURCE_DIR}/firmware/*")
set(scanned 0)
foreach(relative IN LISTS files)
  if(NOT relative MATCHES "\\.(cc|h)$")
    continue()
  endif()
  layer_of_file("${relative}" layer)
  if(layer STREQUAL "")
    message(FATAL_ERROR "${relative}: in no layer; add its folder to check_layering.cmake")
  endif()
  check_file("${SOURCE_DIR}/${relative}" "${relative}" ${layer})
  math(EXPR scanned "${scanned} + 1")
endforeach()
if(EXTRA_FILE)
  check_file("${EXTRA_FILE}" "${EXTRA_FILE}" ${EXTRA_LAYER})
  math(EXPR scanned "${scanned} + 1")
endif()

if(violations GREATER 0)
  message(FATAL_ERROR "${violations} include(s) point up the layers")
endif()
message(STATUS "layering: ${scanned} files, every include points down")
