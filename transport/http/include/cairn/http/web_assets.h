// The web page cairnd serves at "/" (transport/http/web/index.html), compiled
// into the binary: it works offline and needs no files on the gateway.
#pragma once

#include <string_view>

namespace cairn {

// One self-contained HTML document (inline CSS and JavaScript, SVG chart).
extern const std::string_view kWebIndexHtml;

}  // namespace cairn
