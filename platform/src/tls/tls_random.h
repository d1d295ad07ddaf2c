// The random generator TLS contexts and their connections draw from.
#pragma once

#include <cstddef>
#include <memory>

#include <mbedtls/ctr_drbg.h>

#include "cairn/platform/env.h"
#include "cairn/platform/mutex.h"
#include "cairn/platform/status.h"

namespace cairn::tls_internal {

// A CTR_DRBG fed by Env::RandomBytes (at seeding and at every reseed), so the
// operating system's randomness is reached through the Env like everything
// else. Thread-safe: Generate serialises callers with a mutex, which keeps
// the generator's state consistent whatever Mbed TLS's own threading option
// says.
class TlsRandom {
 public:
  // Seeds a generator with "cairn" as personalisation. `env` is not owned
  // and must outlive the generator.
  static Result<std::unique_ptr<TlsRandom>> Create(Env* env);

  ~TlsRandom();
  TlsRandom(const TlsRandom&) = delete;
  TlsRandom& operator=(const TlsRandom&) = delete;

  // Mbed TLS's f_rng: fills `output` with `length` random bytes. `self` is a
  // TlsRandom. Returns 0 or an Mbed TLS error code.
  static int Generate(void* self, unsigned char* output, size_t length);

 private:
  explicit TlsRandom(Env* env);

  // Mbed TLS's f_entropy over Env::RandomBytes; `env` is an Env.
  static int GatherEntropy(void* env, unsigned char* output, size_t length);

  Env* const env_;
  Mutex mutex_;
  mbedtls_ctr_drbg_context generator_ GUARDED_BY(mutex_);
};

}  // namespace cairn::tls_internal
