# Turns a web asset into a C++ source defining `const std::string_view
# <SYMBOL>` (namespace cairn) over its bytes, so cairnd serves it without
# reading files at run time. Run as: cmake -DINPUT=... -DOUTPUT=... -DSYMBOL=... -P embed.cmake
file(READ "${INPUT}" content HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${content}")
get_filename_component(name "${INPUT}" NAME)
file(WRITE "${OUTPUT}" "// Generated from ${name} by transport/http/web/embed.cmake; do not edit.
#include <string_view>

namespace cairn {
namespace {
constexpr char kBytes[] = {
    ${bytes}'\\0'};
}  // namespace
extern const std::string_view ${SYMBOL};
const std::string_view ${SYMBOL}(kBytes, sizeof(kBytes) - 1);
}  // namespace cairn
")
