// What MqttLinkOptions become in Paho's terms (mqtt_paho_options.h).
#include "mqtt_paho_options.h"

#include <chrono>

namespace cairn {

mqtt::connect_options PahoConnectOptions(const MqttLinkOptions& options) {
  mqtt::connect_options_builder builder;
  builder.mqtt_version(MQTTVERSION_3_1_1)
      .clean_session(options.clean_session)
      .keep_alive_interval(std::chrono::seconds(options.keep_alive_seconds))
      .connect_timeout(std::chrono::milliseconds(options.connect_timeout_ms))
      .automatic_reconnect(false);
  if (!options.username.empty()) {
    builder.user_name(options.username);
    if (!options.password.empty()) builder.password(options.password);
  }
  if (options.tls.has_value()) {
    const MqttTlsOptions& tls = *options.tls;
    mqtt::ssl_options_builder ssl;
    if (!tls.ca_file.empty()) ssl.trust_store(tls.ca_file);
    if (!tls.cert_file.empty()) ssl.key_store(tls.cert_file).private_key(tls.key_file);
    ssl.enable_server_cert_auth(true).verify(tls.verify_hostname);
    builder.ssl(ssl.finalize());
  }
  return builder.finalize();
}

}  // namespace cairn
