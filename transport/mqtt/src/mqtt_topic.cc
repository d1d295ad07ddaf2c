#include "cairn/mqtt/mqtt_topic.h"

#include <string>
#include <vector>

#include "cairn/util/utf8.h"

namespace cairn {
namespace {

std::vector<std::string_view> TopicLevels(std::string_view text) {
  std::vector<std::string_view> levels;
  size_t start = 0;
  while (true) {
    const size_t end = text.find('/', start);
    if (end == std::string_view::npos) {
      levels.push_back(text.substr(start));
      return levels;
    }
    levels.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

}  // namespace

bool IsMqttUtf8(std::string_view text) {
  return text.find('\0') == std::string_view::npos && util::IsValidUtf8(text);
}

Status CheckMqttTopicName(std::string_view topic) {
  if (topic.empty()) return Status::InvalidArgument("empty MQTT topic");
  if (topic.size() > kMaxMqttStringBytes) return Status::InvalidArgument("MQTT topic longer than 65535 bytes");
  if (topic.find_first_of("#+") != std::string_view::npos) {
    return Status::InvalidArgument("MQTT topic name must not contain '#' or '+': " + std::string(topic));
  }
  if (!IsMqttUtf8(topic)) {
    return Status::InvalidArgument("MQTT topic is not valid UTF-8 without NUL: " + std::string(topic));
  }
  return Status::Ok();
}

Status CheckMqttTopicFilter(std::string_view filter) {
  if (filter.empty()) return Status::InvalidArgument("empty MQTT topic filter");
  if (filter.size() > kMaxMqttStringBytes) {
    return Status::InvalidArgument("MQTT topic filter longer than 65535 bytes");
  }
  if (!IsMqttUtf8(filter)) {
    return Status::InvalidArgument("MQTT topic filter is not valid UTF-8 without NUL: " + std::string(filter));
  }
  const std::vector<std::string_view> levels = TopicLevels(filter);
  for (size_t i = 0; i < levels.size(); ++i) {
    if (levels[i].find_first_of("#+") != std::string_view::npos && levels[i].size() != 1) {
      return Status::InvalidArgument("MQTT wildcard must fill a whole topic level: " + std::string(filter));
    }
    if (levels[i] == "#" && i + 1 != levels.size()) {
      return Status::InvalidArgument("MQTT '#' wildcard must be the last topic level: " + std::string(filter));
    }
  }
  return Status::Ok();
}

bool MqttTopicMatches(std::string_view filter, std::string_view topic) {
  if (!topic.empty() && topic.front() == '$' && !filter.empty() &&
      (filter.front() == '+' || filter.front() == '#')) {
    return false;
  }
  const std::vector<std::string_view> filter_levels = TopicLevels(filter);
  const std::vector<std::string_view> topic_levels = TopicLevels(topic);
  for (size_t i = 0; i < filter_levels.size(); ++i) {
    // '#' also matches the parent level: "a/#" matches "a".
    if (filter_levels[i] == "#") return true;
    if (i >= topic_levels.size()) return false;
    if (filter_levels[i] != "+" && filter_levels[i] != topic_levels[i]) return false;
  }
  return filter_levels.size() == topic_levels.size();
}

}  // namespace cairn
