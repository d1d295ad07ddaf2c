#include "test_pki.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include <mbedtls/asn1.h>
#include <mbedtls/bignum.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecp.h>
#include <mbedtls/error.h>
#include <mbedtls/oid.h>
#include <mbedtls/pk.h>
#include <mbedtls/x509_crt.h>

#include "cairn/platform/env.h"

namespace cairn {
namespace {

constexpr int64_t kSecondsPerDay = 24 * 60 * 60;

Status MbedTlsFailure(std::string_view operation, int error) {
  char description[200] = {};
  mbedtls_strerror(error, description, sizeof(description));
  return Status::Internal("test PKI: " + std::string(operation) + ": " + description);
}

// A CTR_DRBG over Env::RandomBytes, used by one GenerateTestPki call.
class PkiRandom {
 public:
  PkiRandom() { mbedtls_ctr_drbg_init(&generator_); }
  ~PkiRandom() { mbedtls_ctr_drbg_free(&generator_); }
  PkiRandom(const PkiRandom&) = delete;
  PkiRandom& operator=(const PkiRandom&) = delete;

  Status Seed(Env* env) {
    static constexpr std::string_view kPersonalisation = "cairn test pki";
    int result = mbedtls_ctr_drbg_seed(&generator_, &PkiRandom::GatherEntropy, env,
                                       reinterpret_cast<const unsigned char*>(kPersonalisation.data()),
                                       kPersonalisation.size());
    return result == 0 ? Status::Ok() : MbedTlsFailure("seeding the random generator", result);
  }

  static int Generate(void* self, unsigned char* output, size_t length) {
    return mbedtls_ctr_drbg_random(&static_cast<PkiRandom*>(self)->generator_, output, length);
  }

 private:
  static int GatherEntropy(void* env, unsigned char* output, size_t length) {
    Status status = static_cast<Env*>(env)->RandomBytes(std::span<uint8_t>(output, length));
    return status.ok() ? 0 : MBEDTLS_ERR_CTR_DRBG_ENTROPY_SOURCE_FAILED;
  }

  mbedtls_ctr_drbg_context generator_;
};

class KeyPair {
 public:
  KeyPair() { mbedtls_pk_init(&key_); }
  ~KeyPair() { mbedtls_pk_free(&key_); }
  KeyPair(const KeyPair&) = delete;
  KeyPair& operator=(const KeyPair&) = delete;

  Status Generate(PkiRandom* random) {
    int result = mbedtls_pk_setup(&key_, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));
    if (result != 0) return MbedTlsFailure("pk setup", result);
    result = mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(key_), &PkiRandom::Generate, random);
    return result == 0 ? Status::Ok() : MbedTlsFailure("generating an EC key", result);
  }

  Result<std::string> Pem() {
    unsigned char buffer[1024] = {};
    int result = mbedtls_pk_write_key_pem(&key_, buffer, sizeof(buffer));
    if (result != 0) return MbedTlsFailure("writing a key", result);
    return std::string(reinterpret_cast<const char*>(buffer));
  }

  mbedtls_pk_context* get() { return &key_; }

 private:
  mbedtls_pk_context key_;
};

// DER encoding of one element: tag, definite length, contents.
std::string DerElement(unsigned char tag, std::string_view contents) {
  std::string der(1, static_cast<char>(tag));
  const size_t length = contents.size();
  if (length < 0x80) {
    der += static_cast<char>(length);
  } else if (length <= 0xFF) {
    der += '\x81';
    der += static_cast<char>(length);
  } else {
    der += '\x82';
    der += static_cast<char>(length >> 8);
    der += static_cast<char>(length & 0xFF);
  }
  der.append(contents);
  return der;
}

constexpr unsigned char kSequence = MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE;

// ExtKeyUsageSyntax ::= SEQUENCE SIZE (1..MAX) OF KeyPurposeId
std::string ExtendedKeyUsage(std::string_view purpose_oid) {
  return DerElement(kSequence, DerElement(MBEDTLS_ASN1_OID, purpose_oid));
}

// GeneralNames with one dNSName ([2] IA5String) and IP addresses ([7] OCTET
// STRING, network byte order).
std::string AlternativeNames(std::string_view dns_name, const std::vector<std::string>& addresses) {
  std::string names = DerElement(MBEDTLS_ASN1_CONTEXT_SPECIFIC | 2, dns_name);
  for (const std::string& address : addresses)
    names += DerElement(MBEDTLS_ASN1_CONTEXT_SPECIFIC | 7, address);
  return DerElement(kSequence, names);
}

// "YYYYMMDDhhmmss" in UTC, the form x509write takes.
std::string CertificateTime(int64_t unix_seconds) {
  using namespace std::chrono;
  const sys_seconds time{seconds{unix_seconds}};
  const sys_days day = floor<days>(time);
  const year_month_day date{day};
  const hh_mm_ss<seconds> clock{time - day};
  char text[32] = {};
  std::snprintf(text, sizeof(text), "%04d%02u%02u%02d%02d%02d", static_cast<int>(date.year()),
                static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                static_cast<int>(clock.hours().count()), static_cast<int>(clock.minutes().count()),
                static_cast<int>(clock.seconds().count()));
  return text;
}

struct CertificateSpec {
  std::string subject;  // "CN=...,O=..."
  KeyPair* subject_key = nullptr;
  std::string issuer;
  KeyPair* issuer_key = nullptr;
  bool is_ca = false;
  unsigned int key_usage = 0;
  std::string extended_key_usage;  // DER, empty: none
  std::string alternative_names;   // DER, empty: none
};

class CertificateWriter {
 public:
  CertificateWriter() {
    mbedtls_x509write_crt_init(&writer_);
    mbedtls_mpi_init(&serial_);
  }
  ~CertificateWriter() {
    mbedtls_mpi_free(&serial_);
    mbedtls_x509write_crt_free(&writer_);
  }
  CertificateWriter(const CertificateWriter&) = delete;
  CertificateWriter& operator=(const CertificateWriter&) = delete;

  Result<std::string> Write(const CertificateSpec& spec, const std::string& not_before,
                            const std::string& not_after, PkiRandom* random) {
    mbedtls_x509write_crt_set_version(&writer_, MBEDTLS_X509_CRT_VERSION_3);
    mbedtls_x509write_crt_set_md_alg(&writer_, MBEDTLS_MD_SHA256);
    mbedtls_x509write_crt_set_subject_key(&writer_, spec.subject_key->get());
    mbedtls_x509write_crt_set_issuer_key(&writer_, spec.issuer_key->get());
    CAIRN_RETURN_IF_ERROR(
        Check("subject name", mbedtls_x509write_crt_set_subject_name(&writer_, spec.subject.c_str())));
    CAIRN_RETURN_IF_ERROR(
        Check("issuer name", mbedtls_x509write_crt_set_issuer_name(&writer_, spec.issuer.c_str())));

    // A positive random serial: distinct across runs, as clients that cache
    // certificates by issuer and serial expect.
    unsigned char serial[16] = {};
    CAIRN_RETURN_IF_ERROR(Check("serial", PkiRandom::Generate(random, serial, sizeof(serial))));
    serial[0] = static_cast<unsigned char>((serial[0] & 0x7F) | 0x01);
    CAIRN_RETURN_IF_ERROR(Check("serial", mbedtls_mpi_read_binary(&serial_, serial, sizeof(serial))));
    CAIRN_RETURN_IF_ERROR(Check("serial", mbedtls_x509write_crt_set_serial(&writer_, &serial_)));

    CAIRN_RETURN_IF_ERROR(Check(
        "validity", mbedtls_x509write_crt_set_validity(&writer_, not_before.c_str(), not_after.c_str())));
    CAIRN_RETURN_IF_ERROR(Check("basic constraints", mbedtls_x509write_crt_set_basic_constraints(
                                                         &writer_, spec.is_ca ? 1 : 0, spec.is_ca ? 0 : -1)));
    CAIRN_RETURN_IF_ERROR(
        Check("subject key id", mbedtls_x509write_crt_set_subject_key_identifier(&writer_)));
    CAIRN_RETURN_IF_ERROR(
        Check("authority key id", mbedtls_x509write_crt_set_authority_key_identifier(&writer_)));
    CAIRN_RETURN_IF_ERROR(Check("key usage", mbedtls_x509write_crt_set_key_usage(&writer_, spec.key_usage)));
    if (!spec.extended_key_usage.empty()) {
      CAIRN_RETURN_IF_ERROR(
          Check("extended key usage",
                SetExtension(MBEDTLS_OID_EXTENDED_KEY_USAGE, MBEDTLS_OID_SIZE(MBEDTLS_OID_EXTENDED_KEY_USAGE),
                             spec.extended_key_usage)));
    }
    if (!spec.alternative_names.empty()) {
      CAIRN_RETURN_IF_ERROR(
          Check("subject alternative names",
                SetExtension(MBEDTLS_OID_SUBJECT_ALT_NAME, MBEDTLS_OID_SIZE(MBEDTLS_OID_SUBJECT_ALT_NAME),
                             spec.alternative_names)));
    }
    unsigned char pem[4096] = {};
    CAIRN_RETURN_IF_ERROR(Check(
        "writing", mbedtls_x509write_crt_pem(&writer_, pem, sizeof(pem), &PkiRandom::Generate, random)));
    return std::string(reinterpret_cast<const char*>(pem));
  }

 private:
  static Status Check(std::string_view what, int result) {
    return result == 0 ? Status::Ok() : MbedTlsFailure("certificate " + std::string(what), result);
  }

  int SetExtension(const char* oid, size_t oid_length, const std::string& value) {
    return mbedtls_x509write_crt_set_extension(
        &writer_, oid, oid_length, 0, reinterpret_cast<const unsigned char*>(value.data()), value.size());
  }

  mbedtls_x509write_cert writer_;
  mbedtls_mpi serial_;
};

Result<std::string> IssueCertificate(const CertificateSpec& spec, const std::string& not_before,
                                     const std::string& not_after, PkiRandom* random) {
  CertificateWriter writer;
  return writer.Write(spec, not_before, not_after, random);
}

}  // namespace

Result<TestPki> GenerateTestPki(const std::string& dir) {
  Env* env = Env::Default();
  CAIRN_RETURN_IF_ERROR(env->CreateDirs(dir));
  PkiRandom random;
  CAIRN_RETURN_IF_ERROR(random.Seed(env));

  KeyPair ca_key, server_key, client_key, other_ca_key;
  for (KeyPair* key : {&ca_key, &server_key, &client_key, &other_ca_key}) {
    CAIRN_RETURN_IF_ERROR(key->Generate(&random));
  }

  const int64_t now = env->NowUnixNanos() / 1'000'000'000;
  const std::string not_before = CertificateTime(now - kSecondsPerDay);
  const std::string not_after = CertificateTime(now + 30 * kSecondsPerDay);

  const std::string ca_name = "CN=cairn test CA,O=cairn";
  const unsigned int ca_usage = MBEDTLS_X509_KU_KEY_CERT_SIGN | MBEDTLS_X509_KU_CRL_SIGN;
  const std::string server_purpose(MBEDTLS_OID_SERVER_AUTH, MBEDTLS_OID_SIZE(MBEDTLS_OID_SERVER_AUTH));
  const std::string client_purpose(MBEDTLS_OID_CLIENT_AUTH, MBEDTLS_OID_SIZE(MBEDTLS_OID_CLIENT_AUTH));
  const std::string loopback_v4("\x7f\x00\x00\x01", 4);
  const std::string loopback_v6 = std::string(15, '\0') + '\x01';

  CertificateSpec ca{.subject = ca_name,
                     .subject_key = &ca_key,
                     .issuer = ca_name,
                     .issuer_key = &ca_key,
                     .is_ca = true,
                     .key_usage = ca_usage,
                     .extended_key_usage = {},
                     .alternative_names = {}};
  CertificateSpec server{.subject = "CN=localhost,O=cairn",
                         .subject_key = &server_key,
                         .issuer = ca_name,
                         .issuer_key = &ca_key,
                         .is_ca = false,
                         .key_usage = MBEDTLS_X509_KU_DIGITAL_SIGNATURE,
                         .extended_key_usage = ExtendedKeyUsage(server_purpose),
                         .alternative_names = AlternativeNames("localhost", {loopback_v4, loopback_v6})};
  CertificateSpec client{.subject = "CN=cairn-test-client,O=cairn",
                         .subject_key = &client_key,
                         .issuer = ca_name,
                         .issuer_key = &ca_key,
                         .is_ca = false,
                         .key_usage = MBEDTLS_X509_KU_DIGITAL_SIGNATURE,
                         .extended_key_usage = ExtendedKeyUsage(client_purpose),
                         .alternative_names = AlternativeNames("gateway-7.example", {})};
  const std::string other_ca_name = "CN=cairn unrelated test CA,O=cairn";
  CertificateSpec other_ca{.subject = other_ca_name,
                           .subject_key = &other_ca_key,
                           .issuer = other_ca_name,
                           .issuer_key = &other_ca_key,
                           .is_ca = true,
                           .key_usage = ca_usage,
                           .extended_key_usage = {},
                           .alternative_names = {}};

  TestPki pki;
  pki.ca_certificate_path = JoinPath(dir, "ca.pem");
  pki.ca_key_path = JoinPath(dir, "ca.key");
  pki.server_certificate_path = JoinPath(dir, "server.pem");
  pki.server_key_path = JoinPath(dir, "server.key");
  pki.client_certificate_path = JoinPath(dir, "client.pem");
  pki.client_key_path = JoinPath(dir, "client.key");
  pki.other_ca_certificate_path = JoinPath(dir, "other_ca.pem");

  struct Output {
    const std::string* path;
    Result<std::string> contents;
  };
  Output outputs[] = {
      {&pki.ca_certificate_path, IssueCertificate(ca, not_before, not_after, &random)},
      {&pki.ca_key_path, ca_key.Pem()},
      {&pki.server_certificate_path, IssueCertificate(server, not_before, not_after, &random)},
      {&pki.server_key_path, server_key.Pem()},
      {&pki.client_certificate_path, IssueCertificate(client, not_before, not_after, &random)},
      {&pki.client_key_path, client_key.Pem()},
      {&pki.other_ca_certificate_path, IssueCertificate(other_ca, not_before, not_after, &random)},
  };
  for (Output& output : outputs) {
    if (!output.contents.ok()) return output.contents.status();
    CAIRN_RETURN_IF_ERROR(env->WriteFileAtomically(*output.path, *output.contents));
  }
  return pki;
}

}  // namespace cairn
