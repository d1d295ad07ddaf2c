// What the HTTP API's handlers share (http_api.cc, api_write.cc): a routed
// request with its decoded pieces and its token, and the error rendering.
//
// Thread-safety: a Call belongs to one request on one thread.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cairn/http/http_api.h"
#include "cairn/shell/record_table.h"

namespace cairn {

namespace http_api_internal {

// Query parameters that carry credentials (InfluxDB 1.x) rather than a
// query; every endpoint accepts and ignores them.
inline bool IsCredentialParameter(std::string_view name) { return name == "u" || name == "p"; }

// The tag.NAME=VALUE parameters of a read as the command's --tags option.
inline void AddTagFilter(const TagMap& tags, std::vector<std::pair<std::string, std::string>>* options) {
  if (!tags.empty()) options->emplace_back("tags", FormatTagsOption(tags));
}

// An error answer carrying a failed Status (HttpStatusFor).
inline HttpResponse ErrorFor(const Status& status) {
  return HttpResponse::Error(HttpStatusFor(status), status.message(), StatusCodeName(status.code()));
}

}  // namespace http_api_internal

// What a request carries once routed: its decoded pieces and its token.
class HttpApi::Call {
 public:
  explicit Call(const HttpRequest& request) : request_(request) {}

  const HttpRequest& request() const { return request_; }
  std::vector<std::string>& segments() { return segments_; }
  std::vector<std::pair<std::string, std::string>>& parameters() { return parameters_; }
  std::optional<TokenInfo>& token() { return token_; }

  // The value of query parameter `name`, or nullopt.
  std::optional<std::string> Parameter(std::string_view name) const {
    for (const auto& [key, value] : parameters_) {
      if (key == name) return value;
    }
    return std::nullopt;
  }

  // The tag filters given as tag.NAME=VALUE parameters.
  std::map<std::string, std::string> TagParameters() const {
    std::map<std::string, std::string> tags;
    for (const auto& [key, value] : parameters_) {
      if (key.size() > 4 && key.compare(0, 4, "tag.") == 0) tags[key.substr(4)] = value;
    }
    return tags;
  }

  // 400 naming the first parameter outside `allowed`, so that a typo
  // (?form= for ?from=) is not silently a different query.
  std::optional<HttpResponse> CheckParameters(std::initializer_list<std::string_view> allowed) const {
    std::set<std::string_view> seen;
    for (const auto& [key, value] : parameters_) {
      if (http_api_internal::IsCredentialParameter(key)) continue;
      // "tag.*" admits every tag filter, tag.site=a and the like.
      const bool tag_filter = key.size() > 4 && key.compare(0, 4, "tag.") == 0 &&
                              std::find(allowed.begin(), allowed.end(), "tag.*") != allowed.end();
      if (!tag_filter && std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string list;
        for (std::string_view name : allowed) list += (list.empty() ? "" : ", ") + std::string(name);
        return HttpResponse::Error(400,
                                   "unknown query parameter '" + key + "'" +
                                       (list.empty() ? "; this endpoint takes none" : "; accepted: " + list));
      }
      if (!seen.insert(key).second) {
        return HttpResponse::Error(400, "query parameter '" + key + "' is given more than once");
      }
    }
    return std::nullopt;
  }

  // 403 unless the token grants `access` to `table`.
  std::optional<HttpResponse> Require(Access access, std::string_view table) const {
    if (token_ && token_->Allows(access, table)) return std::nullopt;
    const std::string what = access == Access::kAdmin  ? "the admin scope"
                             : access == Access::kRead ? "scope read:" + std::string(table)
                                                       : "scope write:" + std::string(table);
    return HttpResponse::Error(403, "token '" + (token_ ? token_->name : std::string()) + "' lacks " + what);
  }

 private:
  const HttpRequest& request_;
  std::vector<std::string> segments_;
  std::vector<std::pair<std::string, std::string>> parameters_;
  std::optional<TokenInfo> token_;
};

}  // namespace cairn
