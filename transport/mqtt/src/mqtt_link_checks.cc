// The checks MqttLink makes before it talks to a broker: options and server
// URIs (mqtt_link_checks.h); topic names and filters are mqtt_topic.cc's.
#include "mqtt_link_checks.h"

#include <string_view>

#include <mqtt/async_client.h>

#include "cairn/mqtt/mqtt_topic.h"

namespace cairn {
namespace {

// Checks "scheme://host[:port]" and returns the URI Paho understands
// (mqtts:// spelled ssl://), setting *tls when the scheme asks for TLS.
Result<std::string> NormalizeServerUri(const std::string& uri, bool* tls) {
  const size_t separator = uri.find("://");
  if (separator == std::string::npos) {
    return Status::InvalidArgument("MQTT server URI has no scheme (tcp://, ssl://, mqtts://): " + uri);
  }
  const std::string scheme = uri.substr(0, separator);
  const std::string authority = uri.substr(separator + 3);
  if (scheme == "tcp") {
    *tls = false;
  } else if (scheme == "ssl" || scheme == "mqtts") {
    *tls = true;
  } else {
    return Status::InvalidArgument("MQTT server URI scheme must be tcp://, ssl:// or mqtts://: " + uri);
  }
  std::string_view host = authority;
  std::string_view port;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos)
      return Status::InvalidArgument("MQTT server URI has an unclosed '[': " + uri);
    std::string_view rest = host.substr(close + 1);
    host = host.substr(1, close - 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return Status::InvalidArgument("MQTT server URI has junk after ']': " + uri);
      port = rest.substr(1);
      if (port.empty()) return Status::InvalidArgument("MQTT server URI has an empty port: " + uri);
    }
  } else {
    const size_t colon = host.rfind(':');
    if (colon != std::string_view::npos) {
      port = host.substr(colon + 1);
      host = host.substr(0, colon);
      if (port.empty()) return Status::InvalidArgument("MQTT server URI has an empty port: " + uri);
    }
  }
  if (host.empty() || host.find_first_of("/?# ") != std::string_view::npos) {
    return Status::InvalidArgument("MQTT server URI needs a host (scheme://host:port): " + uri);
  }
  if (!port.empty()) {
    if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) {
      return Status::InvalidArgument("MQTT server URI has a bad port: " + uri);
    }
    const int number = std::stoi(std::string(port));
    if (number < 1 || number > 65535)
      return Status::InvalidArgument("MQTT server URI port out of range: " + uri);
  }
  return (*tls ? std::string("ssl://") : std::string("tcp://")) + authority;
}

Status CheckReadable(Env* env, const std::string& path, const char* what) {
  Result<std::unique_ptr<File>> file = env->OpenFile(path, OpenMode::kReadOnly);
  if (!file.ok()) {
    return Status::InvalidArgument(std::string("MQTT TLS ") + what + " " + path +
                                   " is not readable: " + file.status().ToString());
  }
  char byte;
  Result<size_t> read = (*file)->ReadAt(0, 1, &byte);
  if (!read.ok()) {
    return Status::InvalidArgument(std::string("MQTT TLS ") + what + " " + path +
                                   " is not readable: " + read.status().ToString());
  }
  if (*read == 0) return Status::InvalidArgument(std::string("MQTT TLS ") + what + " " + path + " is empty");
  return Status::Ok();
}

}  // namespace

Status CheckPublishAdmission(const MqttLinkOptions& options, bool stopping, bool connected, size_t inflight) {
  if (stopping) return Status::Unavailable("MQTT link stopped");
  if (!connected) return Status::Unavailable("not connected to MQTT broker " + options.server_uri);
  if (inflight >= options.max_inflight) {
    return Status::Unavailable(std::to_string(inflight) + " MQTT publishes await PUBACK (max_inflight)");
  }
  return Status::Ok();
}

Status CheckOptions(Env* env, const MqttLinkOptions& options, std::string* paho_uri) {
  bool tls = false;
  Result<std::string> uri = NormalizeServerUri(options.server_uri, &tls);
  if (!uri.ok()) return uri.status();
  *paho_uri = *uri;
  if (tls && !options.tls.has_value()) {
    return Status::InvalidArgument("MQTT server URI " + options.server_uri +
                                   " asks for TLS but no TLS options given");
  }
  if (!tls && options.tls.has_value()) {
    return Status::InvalidArgument("MQTT TLS options given for a plain tcp:// server URI " +
                                   options.server_uri);
  }
  if (options.client_id.empty()) return Status::InvalidArgument("empty MQTT client id");
  if (options.client_id.size() > kMaxMqttStringBytes) {
    return Status::InvalidArgument("MQTT client id longer than 65535 bytes");
  }
  if (!IsMqttUtf8(options.client_id)) {
    return Status::InvalidArgument("MQTT client id is not valid UTF-8 without NUL");
  }
  if (!options.password.empty() && options.username.empty()) {
    return Status::InvalidArgument("MQTT password given without a user name");
  }
  if (options.username.size() > kMaxMqttStringBytes || !IsMqttUtf8(options.username)) {
    return Status::InvalidArgument("MQTT user name must be UTF-8 without NUL, at most 65535 bytes");
  }
  if (options.password.size() > kMaxMqttStringBytes) {
    return Status::InvalidArgument("MQTT password longer than 65535 bytes");
  }
  if (options.keep_alive_seconds < 0 || options.keep_alive_seconds > 65535) {
    return Status::InvalidArgument("MQTT keep_alive_seconds must be 0..65535, got " +
                                   std::to_string(options.keep_alive_seconds));
  }
  if (options.connect_timeout_ms < 1) {
    return Status::InvalidArgument("MQTT connect_timeout_ms must be positive, got " +
                                   std::to_string(options.connect_timeout_ms));
  }
  if (options.max_inflight == 0 || options.max_inflight > 65535) {
    return Status::InvalidArgument("MQTT max_inflight must be 1..65535, got " +
                                   std::to_string(options.max_inflight));
  }
  if (options.reconnect_min_ms < 1 || options.reconnect_max_ms < options.reconnect_min_ms) {
    return Status::InvalidArgument("MQTT reconnect backoff needs 1 <= reconnect_min_ms (" +
                                   std::to_string(options.reconnect_min_ms) + ") <= reconnect_max_ms (" +
                                   std::to_string(options.reconnect_max_ms) + ")");
  }
  for (const std::string& filter : options.subscriptions) {
    CAIRN_RETURN_IF_ERROR(CheckMqttTopicFilter(filter));
  }
  if (options.tls.has_value()) {
    const MqttTlsOptions& t = *options.tls;
    if (t.cert_file.empty() != t.key_file.empty()) {
      return Status::InvalidArgument("MQTT TLS client certificate and key must be given together");
    }
    if (!t.ca_file.empty()) CAIRN_RETURN_IF_ERROR(CheckReadable(env, t.ca_file, "CA file"));
    if (!t.cert_file.empty()) CAIRN_RETURN_IF_ERROR(CheckReadable(env, t.cert_file, "certificate file"));
    if (!t.key_file.empty()) CAIRN_RETURN_IF_ERROR(CheckReadable(env, t.key_file, "key file"));
  }
  return Status::Ok();
}

// Paho's return codes for a failed connect: 1..5 are the broker's CONNACK
// refusals (MQTT 3.1.1 §3.2.2.3), the rest are the library's.
std::string ConnectFailureReason(int return_code) {
  switch (return_code) {
    case 1:
      return "broker refused the connection: unacceptable protocol version";
    case 2:
      return "broker refused the connection: client identifier rejected";
    case 3:
      return "broker refused the connection: server unavailable";
    case 4:
      return "broker refused the connection: bad user name or password";
    case 5:
      return "broker refused the connection: not authorized";
    default:
      break;
  }
  std::string text = mqtt::exception::error_str(return_code);
  if (text.empty()) text = "error";
  return text + " (code " + std::to_string(return_code) + ")";
}

}  // namespace cairn
