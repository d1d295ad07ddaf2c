#include "tls/tls_names.h"

#include <cstring>

#include <mbedtls/asn1.h>
#include <mbedtls/oid.h>

namespace cairn::tls_internal {

void ForEachAlternativeName(const mbedtls_x509_crt& certificate,
                            const std::function<bool(int tag, std::string_view value)>& visit) {
  unsigned char* cursor = certificate.v3_ext.p;
  if (cursor == nullptr || certificate.v3_ext.len == 0) return;
  const unsigned char* end = cursor + certificate.v3_ext.len;
  size_t length = 0;
  if (mbedtls_asn1_get_tag(&cursor, end, &length, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) != 0)
    return;
  end = cursor + length;
  while (cursor < end) {
    // Extension ::= SEQUENCE { extnID OID, critical BOOLEAN DEFAULT FALSE, extnValue OCTET STRING }
    if (mbedtls_asn1_get_tag(&cursor, end, &length, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) != 0) {
      return;
    }
    const unsigned char* extension_end = cursor + length;
    size_t oid_length = 0;
    if (mbedtls_asn1_get_tag(&cursor, extension_end, &oid_length, MBEDTLS_ASN1_OID) != 0) return;
    const bool is_alternative_names = oid_length == MBEDTLS_OID_SIZE(MBEDTLS_OID_SUBJECT_ALT_NAME) &&
                                      std::memcmp(cursor, MBEDTLS_OID_SUBJECT_ALT_NAME, oid_length) == 0;
    cursor += oid_length;
    if (cursor < extension_end && *cursor == MBEDTLS_ASN1_BOOLEAN) {
      int critical = 0;
      if (mbedtls_asn1_get_bool(&cursor, extension_end, &critical) != 0) return;
    }
    size_t value_length = 0;
    if (mbedtls_asn1_get_tag(&cursor, extension_end, &value_length, MBEDTLS_ASN1_OCTET_STRING) != 0) return;
    if (is_alternative_names) {
      // GeneralNames ::= SEQUENCE OF GeneralName (a tagged choice).
      unsigned char* name = cursor;
      const unsigned char* names_end = cursor + value_length;
      size_t names_length = 0;
      if (mbedtls_asn1_get_tag(&name, names_end, &names_length,
                               MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) != 0) {
        return;
      }
      names_end = name + names_length;
      while (name < names_end) {
        const unsigned char tag = *name++;
        size_t name_length = 0;
        if (mbedtls_asn1_get_len(&name, names_end, &name_length) != 0) return;
        if (!visit(tag & MBEDTLS_ASN1_TAG_VALUE_MASK,
                   std::string_view(reinterpret_cast<const char*>(name), name_length))) {
          return;
        }
        name += name_length;
      }
    }
    cursor = const_cast<unsigned char*>(extension_end);
  }
}

PeerCertificate NamesOf(const mbedtls_x509_crt& certificate) {
  PeerCertificate names;
  for (const mbedtls_x509_name* part = &certificate.subject; part != nullptr; part = part->next) {
    if (part->oid.p != nullptr && MBEDTLS_OID_CMP(MBEDTLS_OID_AT_CN, &part->oid) == 0) {
      names.common_name.assign(reinterpret_cast<const char*>(part->val.p), part->val.len);
      break;
    }
  }
  ForEachAlternativeName(certificate, [&](int tag, std::string_view value) {
    if (tag == MBEDTLS_X509_SAN_DNS_NAME || tag == MBEDTLS_X509_SAN_RFC822_NAME ||
        tag == MBEDTLS_X509_SAN_UNIFORM_RESOURCE_IDENTIFIER) {
      names.alternative_names.emplace_back(value);
    }
    return true;
  });
  return names;
}

}  // namespace cairn::tls_internal
