#include "tls/tls_random.h"

#include <cstdint>
#include <span>
#include <string_view>

#include "tls/tls_errors.h"

namespace cairn::tls_internal {

namespace {
constexpr std::string_view kPersonalisation = "cairn";
}  // namespace

TlsRandom::TlsRandom(Env* env) : env_(env) { mbedtls_ctr_drbg_init(&generator_); }

TlsRandom::~TlsRandom() { mbedtls_ctr_drbg_free(&generator_); }

Result<std::unique_ptr<TlsRandom>> TlsRandom::Create(Env* env) {
  std::unique_ptr<TlsRandom> random(new TlsRandom(env));
  MutexLock lock(&random->mutex_);
  int result = mbedtls_ctr_drbg_seed(&random->generator_, &TlsRandom::GatherEntropy, random->env_,
                                     reinterpret_cast<const unsigned char*>(kPersonalisation.data()),
                                     kPersonalisation.size());
  if (result != 0) return Status::IOError("seeding the TLS random generator: " + MbedTlsErrorText(result));
  return random;
}

int TlsRandom::Generate(void* self, unsigned char* output, size_t length) {
  auto* random = static_cast<TlsRandom*>(self);
  MutexLock lock(&random->mutex_);
  return mbedtls_ctr_drbg_random(&random->generator_, output, length);
}

int TlsRandom::GatherEntropy(void* env, unsigned char* output, size_t length) {
  Status status = static_cast<Env*>(env)->RandomBytes(std::span<uint8_t>(output, length));
  return status.ok() ? 0 : MBEDTLS_ERR_CTR_DRBG_ENTROPY_SOURCE_FAILED;
}

}  // namespace cairn::tls_internal
