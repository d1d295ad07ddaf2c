#include "tls/tls_endpoint.h"

#include <cstring>
#include <string_view>

#include <arpa/inet.h>
#include <mbedtls/asn1.h>
#include <mbedtls/oid.h>
#include <mbedtls/platform_util.h>
#include <mbedtls/ssl_ciphersuites.h>

#include "tls/tls_errors.h"
#include "tls/tls_names.h"

// Connections share one configuration, and with it one private key. Mbed TLS
// guards the mutable blinding state of an RSA key with a mutex only when
// built with threading support (Debian's build is).
#if !defined(MBEDTLS_THREADING_C)
#error "cairn's TLS layer needs Mbed TLS built with MBEDTLS_THREADING_C"
#endif

namespace cairn::tls_internal {
namespace {

// ECDHE (forward secrecy) with AEAD ciphers only. ChaCha20-Poly1305 comes
// first: on ARM gateways without AES instructions it is faster in software
// than AES-GCM, and Mbed TLS's server picks by its own order.
const int kCipherSuites[] = {
    MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    MBEDTLS_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    0,
};

const unsigned char* Bytes(const std::string& text) {
  return reinterpret_cast<const unsigned char*>(text.c_str());
}

// Parses the certificates in the PEM file at `path` into `certificates`.
// `what` names the file's role in messages ("TLS certificate").
Status LoadCertificates(Env* env, const std::string& path, std::string_view what,
                        mbedtls_x509_crt* certificates) {
  Result<std::string> contents = env->ReadFileToString(path);
  if (!contents.ok()) return contents.status().WithContext(what);
  // Mbed TLS recognises PEM only when the terminating NUL is counted in.
  int result = mbedtls_x509_crt_parse(certificates, Bytes(*contents), contents->size() + 1);
  if (result < 0) {
    return Status::InvalidArgument(std::string(what) + " " + path + ": " + MbedTlsErrorText(result));
  }
  if (result > 0) {
    return Status::InvalidArgument(std::string(what) + " " + path + ": " + std::to_string(result) +
                                   " of its certificates do not parse");
  }
  return Status::Ok();
}

Status LoadPrivateKey(Env* env, const std::string& path, mbedtls_pk_context* key) {
  Result<std::string> contents = env->ReadFileToString(path);
  if (!contents.ok()) return contents.status().WithContext("TLS private key");
  int result = mbedtls_pk_parse_key(key, Bytes(*contents), contents->size() + 1, nullptr, 0);
  mbedtls_platform_zeroize(contents->data(), contents->size());
  if (result == MBEDTLS_ERR_PK_PASSWORD_REQUIRED) {
    return Status::InvalidArgument("TLS private key " + path + " is encrypted; an unencrypted key is needed");
  }
  if (result != 0) {
    return Status::InvalidArgument("TLS private key " + path + ": " + MbedTlsErrorText(result));
  }
  return Status::Ok();
}

// Whether the subject alternative names of `certificate` include the IP
// address `address` (4 or 16 bytes, network byte order).
bool CertificateListsAddress(const mbedtls_x509_crt& certificate, std::string_view address) {
  bool listed = false;
  ForEachAlternativeName(certificate, [&](int tag, std::string_view value) {
    listed = tag == MBEDTLS_X509_SAN_IP_ADDRESS && value == address;
    return !listed;
  });
  return listed;
}

}  // namespace

TlsEndpoint::TlsEndpoint(Env* env, const TlsEndpointSettings& settings)
    : env_(env),
      role_(settings.role),
      handshake_timeout_ms_(settings.handshake_timeout_ms),
      server_name_(settings.server_name) {
  mbedtls_x509_crt_init(&own_certificates_);
  mbedtls_pk_init(&own_key_);
  mbedtls_x509_crt_init(&trusted_cas_);
  mbedtls_ssl_config_init(&config_);
}

TlsEndpoint::~TlsEndpoint() {
  mbedtls_ssl_config_free(&config_);
  mbedtls_x509_crt_free(&trusted_cas_);
  mbedtls_pk_free(&own_key_);
  mbedtls_x509_crt_free(&own_certificates_);
}

Result<std::shared_ptr<const TlsEndpoint>> TlsEndpoint::Create(Env* env,
                                                               const TlsEndpointSettings& settings) {
  std::shared_ptr<TlsEndpoint> endpoint(new TlsEndpoint(env, settings));
  CAIRN_RETURN_IF_ERROR(endpoint->Configure(settings));
  return std::shared_ptr<const TlsEndpoint>(std::move(endpoint));
}

Status TlsEndpoint::Configure(const TlsEndpointSettings& settings) {
  CAIRN_ASSIGN_OR_RETURN(random_, TlsRandom::Create(env_));
  const int endpoint = role_ == TlsRole::kServer ? MBEDTLS_SSL_IS_SERVER : MBEDTLS_SSL_IS_CLIENT;
  int result = mbedtls_ssl_config_defaults(&config_, endpoint, MBEDTLS_SSL_TRANSPORT_STREAM,
                                           MBEDTLS_SSL_PRESET_DEFAULT);
  if (result != 0) return Status::Internal("TLS configuration defaults: " + MbedTlsErrorText(result));
  mbedtls_ssl_conf_rng(&config_, &TlsRandom::Generate, random_.get());
  mbedtls_ssl_conf_min_version(&config_, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
  mbedtls_ssl_conf_ciphersuites(&config_, kCipherSuites);
  mbedtls_ssl_conf_renegotiation(&config_, MBEDTLS_SSL_RENEGOTIATION_DISABLED);
  return role_ == TlsRole::kServer ? ConfigureServer(settings) : ConfigureClient(settings);
}

Status TlsEndpoint::ConfigureServer(const TlsEndpointSettings& settings) {
  if (settings.certificate_path.empty()) {
    return Status::InvalidArgument("TLS server: no certificate_path given");
  }
  if (settings.private_key_path.empty()) {
    return Status::InvalidArgument("TLS server: no private_key_path given");
  }
  CAIRN_RETURN_IF_ERROR(LoadOwnCredentials(settings));
  if (settings.trusted_ca_path.empty()) {
    mbedtls_ssl_conf_authmode(&config_, MBEDTLS_SSL_VERIFY_NONE);
  } else {
    CAIRN_RETURN_IF_ERROR(LoadCertificates(env_, settings.trusted_ca_path, "TLS client CA", &trusted_cas_));
    mbedtls_ssl_conf_ca_chain(&config_, &trusted_cas_, nullptr);
    mbedtls_ssl_conf_authmode(&config_, MBEDTLS_SSL_VERIFY_REQUIRED);
  }
  // No session cache and no ticket keys are configured: every connection
  // runs a full handshake, so no session state is shared between them.
  return Status::Ok();
}

Status TlsEndpoint::ConfigureClient(const TlsEndpointSettings& settings) {
  if (settings.trusted_ca_path.empty()) return Status::InvalidArgument("TLS client: no ca_path given");
  if (settings.server_name.empty()) return Status::InvalidArgument("TLS client: no server_name given");
  if (settings.certificate_path.empty() != settings.private_key_path.empty()) {
    return Status::InvalidArgument(
        "TLS client: certificate_path and private_key_path must be given together (or neither)");
  }
  CAIRN_RETURN_IF_ERROR(LoadCertificates(env_, settings.trusted_ca_path, "TLS CA", &trusted_cas_));
  mbedtls_ssl_conf_ca_chain(&config_, &trusted_cas_, nullptr);
  mbedtls_ssl_conf_authmode(&config_, MBEDTLS_SSL_VERIFY_REQUIRED);
  if (!settings.certificate_path.empty()) CAIRN_RETURN_IF_ERROR(LoadOwnCredentials(settings));
  mbedtls_ssl_conf_session_tickets(&config_, MBEDTLS_SSL_SESSION_TICKETS_DISABLED);

  // inet_pton only parses text; it makes no system call.
  unsigned char address[16] = {};
  if (::inet_pton(AF_INET, settings.server_name.c_str(), address) == 1) {
    server_address_bytes_.assign(reinterpret_cast<const char*>(address), 4);
  } else if (::inet_pton(AF_INET6, settings.server_name.c_str(), address) == 1) {
    server_address_bytes_.assign(reinterpret_cast<const char*>(address), 16);
  } else {
    dns_server_name_ = settings.server_name;
  }
  if (!server_address_bytes_.empty()) {
    mbedtls_ssl_conf_verify(&config_, &TlsEndpoint::VerifyServerAddress, this);
  }
  return Status::Ok();
}

Status TlsEndpoint::LoadOwnCredentials(const TlsEndpointSettings& settings) {
  CAIRN_RETURN_IF_ERROR(
      LoadCertificates(env_, settings.certificate_path, "TLS certificate", &own_certificates_));
  CAIRN_RETURN_IF_ERROR(LoadPrivateKey(env_, settings.private_key_path, &own_key_));
  int result = mbedtls_pk_check_pair(&own_certificates_.pk, &own_key_);
  if (result != 0) {
    return Status::InvalidArgument("TLS private key " + settings.private_key_path +
                                   " does not belong to certificate " + settings.certificate_path + ": " +
                                   MbedTlsErrorText(result));
  }
  result = mbedtls_ssl_conf_own_cert(&config_, &own_certificates_, &own_key_);
  if (result != 0) return Status::ResourceExhausted("TLS own certificate: " + MbedTlsErrorText(result));
  return Status::Ok();
}

int TlsEndpoint::VerifyServerAddress(void* self, mbedtls_x509_crt* certificate, int depth, uint32_t* flags) {
  const auto* endpoint = static_cast<const TlsEndpoint*>(self);
  if (depth == 0 && !CertificateListsAddress(*certificate, endpoint->server_address_bytes_)) {
    *flags |= MBEDTLS_X509_BADCERT_CN_MISMATCH;
  }
  return 0;
}

}  // namespace cairn::tls_internal
