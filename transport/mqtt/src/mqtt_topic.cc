#include "cairn/mqtt/mqtt_topic.h"

#include <vector>

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
