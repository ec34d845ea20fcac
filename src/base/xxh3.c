/* xxh3.c: the xxHash hashes, written from the xxHash specification (doc/xxhash_spec.md of
 * the xxHash project): XXH64 (ooc_xxh64: small records, seeds) and XXH3-64 (seed 0, default
 * secret), also over columns in memory.
 *
 * Why XXH3 beside XXH64: the scratch store checksums every spilled tile twice (written,
 * read back), and out of core that is gigabytes a run. XXH64's four serial multiply chains run at
 * ~10 GB/s on the hosts we measure; XXH3's long-input loop is 8 independent 32x32->64 multiply-
 * adds per 64-byte stripe, which SIMD units do several at a time (SSE2 on every x86-64, AVX2 where
 * the CPU has it, chosen at run time: the result is the same bits either way).
 *
 * ooc_xxh3_cols hashes columns that are not contiguous (a tile inside a larger column-major
 * buffer) as if they were laid end to end, so a tile can be checksummed where it lies. */
#include "base/base.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define X3_X86 1
#endif

#define X3_P32_1 0x9E3779B1U
#define X3_P32_2 0x85EBCA77U
#define X3_P32_3 0xC2B2AE3DU
#define X3_P64_1 0x9E3779B185EBCA87ULL
#define X3_P64_2 0xC2B2AE3D27D4EB4FULL
#define X3_P64_3 0x165667B19E3779F9ULL
#define X3_P64_4 0x85EBCA77C2B2AE63ULL
#define X3_P64_5 0x27D4EB2F165667C5ULL
#define X3_MX1 0x165667919E3779F9ULL
#define X3_MX2 0x9FB21C651E98DF25ULL

#define X3_STRIPE 64
#define X3_SECRET 192
#define X3_PER_BLOCK ((X3_SECRET - X3_STRIPE) / 8) /* 16 stripes: blocks of 1024 bytes */
#define X3_BLOCK (X3_STRIPE * X3_PER_BLOCK)

static const unsigned char kSecret[X3_SECRET] = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};

/* Little-endian reads (the hash is defined on little-endian words; every host we build for is). */
static uint64_t rd64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}
static uint32_t rd32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
static uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static uint32_t bswap32(uint32_t x) {
  return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
}
static uint64_t bswap64(uint64_t x) {
  return ((uint64_t)bswap32((uint32_t)x) << 32) | bswap32((uint32_t)(x >> 32));
}
static uint64_t fold128(uint64_t a, uint64_t b) {
  unsigned __int128 p = (unsigned __int128)a * b;
  return (uint64_t)p ^ (uint64_t)(p >> 64);
}
static uint64_t avalanche(uint64_t x) {
  x ^= x >> 37;
  x *= X3_MX1;
  return x ^ (x >> 32);
}
static uint64_t avalanche64(uint64_t x) {
  x ^= x >> 33;
  x *= X3_P64_2;
  x ^= x >> 29;
  x *= X3_P64_3;
  return x ^ (x >> 32);
}

/* ---- 0 to 240 bytes ---------------------------------------------------------------------- */

static uint64_t mix16(const unsigned char *in, const unsigned char *s) {
  return fold128(rd64(in) ^ rd64(s), rd64(in + 8) ^ rd64(s + 8));
}

static uint64_t hash_short(const unsigned char *in, size_t len) {
  const unsigned char *s = kSecret;
  if (len == 0) return avalanche64(rd64(s + 56) ^ rd64(s + 64));
  if (len <= 3) {
    uint32_t c = (uint32_t)in[len - 1] | ((uint32_t)len << 8) | ((uint32_t)in[0] << 16) |
                 ((uint32_t)in[len >> 1] << 24);
    return avalanche64((uint64_t)(rd32(s) ^ rd32(s + 4)) ^ c);
  }
  if (len <= 8) {
    uint64_t v = (rd64(s + 8) ^ rd64(s + 16)) ^ ((uint64_t)rd32(in + len - 4) | ((uint64_t)rd32(in) << 32));
    v ^= rotl64(v, 49) ^ rotl64(v, 24);
    v *= X3_MX2;
    v ^= (v >> 35) + len;
    v *= X3_MX2;
    return v ^ (v >> 28);
  }
  if (len <= 16) {
    uint64_t lo = (rd64(s + 24) ^ rd64(s + 32)) ^ rd64(in);
    uint64_t hi = (rd64(s + 40) ^ rd64(s + 48)) ^ rd64(in + len - 8);
    return avalanche(len + bswap64(lo) + hi + fold128(lo, hi));
  }
  uint64_t acc = len * X3_P64_1;
  if (len <= 128) {
    for (int64_t i = (int64_t)((len - 1) >> 5); i >= 0; i--) {
      acc += mix16(in + 16 * i, s + 32 * i);
      acc += mix16(in + len - 16 * i - 16, s + 32 * i + 16);
    }
    return avalanche(acc);
  }
  for (size_t i = 0; i < 8; i++) acc += mix16(in + 16 * i, s + 16 * i);
  acc = avalanche(acc);
  for (size_t i = 8; i < (len >> 4); i++) acc += mix16(in + 16 * i, s + 16 * (i - 8) + 3);
  acc += mix16(in + len - 16, s + 119);
  return avalanche(acc);
}

/* ---- more than 240 bytes: stripes of 64 bytes into 8 accumulators --------------------------- */

/* n stripes from p, the k-th with the secret at s + 8 k (within one block). */
#ifndef X3_X86
static void stripes_scalar(uint64_t *acc, const unsigned char *p, size_t n, const unsigned char *s) {
  for (size_t k = 0; k < n; k++, p += X3_STRIPE, s += 8)
    for (int i = 0; i < 8; i++) {
      uint64_t d = rd64(p + 8 * i), v = d ^ rd64(s + 8 * i);
      acc[i ^ 1] += d;
      acc[i] += (v & 0xffffffffu) * (v >> 32);
    }
}
#else
/* acc[i] += d[i ^ 1] + lo32(d ^ key) * hi32(d ^ key): the 64-bit lanes of a register pair up as
 * i, i ^ 1, so the swap is a shuffle within each 128-bit lane. */
static void stripes_sse2(uint64_t *acc, const unsigned char *p, size_t n, const unsigned char *s) {
  __m128i a[4];
  for (int j = 0; j < 4; j++) a[j] = _mm_loadu_si128((const __m128i *)(acc + 2 * j));
  for (size_t k = 0; k < n; k++, p += X3_STRIPE, s += 8)
    for (int j = 0; j < 4; j++) {
      __m128i d = _mm_loadu_si128((const __m128i *)(p + 16 * j));
      __m128i v = _mm_xor_si128(d, _mm_loadu_si128((const __m128i *)(s + 16 * j)));
      __m128i m = _mm_mul_epu32(v, _mm_shuffle_epi32(v, _MM_SHUFFLE(0, 3, 0, 1)));
      a[j] = _mm_add_epi64(a[j], _mm_add_epi64(m, _mm_shuffle_epi32(d, _MM_SHUFFLE(1, 0, 3, 2))));
    }
  for (int j = 0; j < 4; j++) _mm_storeu_si128((__m128i *)(acc + 2 * j), a[j]);
}

__attribute__((target("avx2"))) static void stripes_avx2(uint64_t *acc, const unsigned char *p,
                                                        size_t n, const unsigned char *s) {
  __m256i a[2];
  for (int j = 0; j < 2; j++) a[j] = _mm256_loadu_si256((const __m256i *)(acc + 4 * j));
  for (size_t k = 0; k < n; k++, p += X3_STRIPE, s += 8)
    for (int j = 0; j < 2; j++) {
      __m256i d = _mm256_loadu_si256((const __m256i *)(p + 32 * j));
      __m256i v = _mm256_xor_si256(d, _mm256_loadu_si256((const __m256i *)(s + 32 * j)));
      __m256i m = _mm256_mul_epu32(v, _mm256_shuffle_epi32(v, _MM_SHUFFLE(0, 3, 0, 1)));
      a[j] = _mm256_add_epi64(a[j],
                              _mm256_add_epi64(m, _mm256_shuffle_epi32(d, _MM_SHUFFLE(1, 0, 3, 2))));
    }
  for (int j = 0; j < 2; j++) _mm256_storeu_si256((__m256i *)(acc + 4 * j), a[j]);
}
#endif

typedef void (*stripes_fn)(uint64_t *, const unsigned char *, size_t, const unsigned char *);

static stripes_fn pick_stripes(void) {
#ifdef X3_X86
  return __builtin_cpu_supports("avx2") ? stripes_avx2 : stripes_sse2;
#else
  return stripes_scalar;
#endif
}

static void scramble(uint64_t *acc) {
  const unsigned char *s = kSecret + X3_SECRET - X3_STRIPE;
  for (int i = 0; i < 8; i++) {
    uint64_t a = acc[i];
    a ^= a >> 47;
    a ^= rd64(s + 8 * i);
    acc[i] = a * X3_P32_1;
  }
}

/* The long-input state, fed in order with pieces of any length: `done` stripes accumulated of
 * the `regular` ones (all but the final stripe: (len - 1) / 64), scrambled after each full block
 * but the last ((len - 1) / 1024 of them); a stripe split between two pieces waits in `part`.
 * The final stripe is the input's last 64 bytes, which the caller passes to finish. */
typedef struct x3_long {
  uint64_t acc[8];
  size_t len, regular, scrambled, done, npart;
  unsigned char part[X3_STRIPE];
  stripes_fn fn;
} x3_long_t;

static void long_init(x3_long_t *x, size_t len) {
  static const uint64_t init[8] = {X3_P32_3, X3_P64_1, X3_P64_2, X3_P64_3,
                                   X3_P64_4, X3_P32_2, X3_P64_5, X3_P32_1};
  memcpy(x->acc, init, sizeof init);
  x->len = len;
  x->regular = (len - 1) / X3_STRIPE;
  x->scrambled = (len - 1) / X3_BLOCK * X3_PER_BLOCK;
  x->done = x->npart = 0;
  x->fn = pick_stripes();
}

/* n whole stripes at p (n <= regular - done). */
static void long_run(x3_long_t *x, const unsigned char *p, size_t n) {
  while (n > 0) {
    size_t at = x->done % X3_PER_BLOCK, k = X3_PER_BLOCK - at;
    if (k > n) k = n;
    x->fn(x->acc, p, k, kSecret + 8 * at);
    x->done += k;
    p += k * X3_STRIPE;
    n -= k;
    if (x->done % X3_PER_BLOCK == 0 && x->done <= x->scrambled) scramble(x->acc);
  }
}

static void long_feed(x3_long_t *x, const unsigned char *p, size_t n) {
  if (x->npart > 0 && x->done < x->regular) {
    size_t k = X3_STRIPE - x->npart;
    if (k > n) k = n;
    memcpy(x->part + x->npart, p, k);
    x->npart += k;
    p += k;
    n -= k;
    if (x->npart < X3_STRIPE) return;
    long_run(x, x->part, 1);
    x->npart = 0;
  }
  if (x->done >= x->regular) return; /* the rest counts only in the final stripe */
  size_t whole = n / X3_STRIPE;
  if (whole > x->regular - x->done) whole = x->regular - x->done;
  long_run(x, p, whole);
  p += whole * X3_STRIPE;
  n -= whole * X3_STRIPE;
  if (x->done < x->regular && n > 0) { /* n < 64 here */
    memcpy(x->part, p, n);
    x->npart = n;
  }
}

static uint64_t long_finish(x3_long_t *x, const unsigned char *last) {
  x->fn(x->acc, last, 1, kSecret + X3_SECRET - X3_STRIPE - 7);
  const unsigned char *s = kSecret + 11;
  uint64_t r = (uint64_t)x->len * X3_P64_1;
  for (int i = 0; i < 4; i++)
    r += fold128(x->acc[2 * i] ^ rd64(s + 16 * i), x->acc[2 * i + 1] ^ rd64(s + 16 * i + 8));
  return avalanche(r);
}

uint64_t ooc_xxh3(const void *data, size_t len) {
  const unsigned char *p = data;
  if (len <= 240) return hash_short(p, len);
  x3_long_t x;
  long_init(&x, len);
  long_run(&x, p, x.regular);
  return long_finish(&x, p + len - X3_STRIPE);
}

uint64_t ooc_xxh3_cols(const void *data, size_t col_bytes, size_t ncols, size_t stride) {
  const unsigned char *p = data;
  size_t len = col_bytes * ncols;
  if (ncols <= 1 || col_bytes == stride) return ooc_xxh3(p, len);
  unsigned char buf[240];
  if (len <= 240) {
    for (size_t c = 0; c < ncols; c++) memcpy(buf + c * col_bytes, p + c * stride, col_bytes);
    return hash_short(buf, len);
  }
  x3_long_t x;
  long_init(&x, len);
  for (size_t c = 0; c < ncols && x.done < x.regular; c++) long_feed(&x, p + c * stride, col_bytes);
  /* the final stripe: the last 64 bytes, gathered from the last columns */
  unsigned char last[X3_STRIPE];
  size_t need = X3_STRIPE;
  for (size_t c = ncols; need > 0; c--) {
    size_t k = col_bytes < need ? col_bytes : need;
    memcpy(last + need - k, p + (c - 1) * stride + col_bytes - k, k);
    need -= k;
  }
  return long_finish(&x, last);
}

/* ---- XXH64 (the public algorithm, written from its specification; same primes) ------------ */
static uint64_t round1(uint64_t acc, uint64_t in) {
  acc += in * X3_P64_2;
  acc = rotl64(acc, 31);
  return acc * X3_P64_1;
}
static uint64_t merge(uint64_t acc, uint64_t v) {
  acc ^= round1(0, v);
  return acc * X3_P64_1 + X3_P64_4;
}

uint64_t ooc_xxh64(const void *data, size_t len, uint64_t seed) {
  const unsigned char *p = data, *end = p + len;
  uint64_t h;
  if (len >= 32) {
    uint64_t v1 = seed + X3_P64_1 + X3_P64_2, v2 = seed + X3_P64_2, v3 = seed, v4 = seed - X3_P64_1;
    const unsigned char *limit = end - 32;
    do {
      v1 = round1(v1, rd64(p));
      v2 = round1(v2, rd64(p + 8));
      v3 = round1(v3, rd64(p + 16));
      v4 = round1(v4, rd64(p + 24));
      p += 32;
    } while (p <= limit);
    h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
    h = merge(h, v1);
    h = merge(h, v2);
    h = merge(h, v3);
    h = merge(h, v4);
  } else {
    h = seed + X3_P64_5;
  }
  h += (uint64_t)len;
  while (p + 8 <= end) {
    h ^= round1(0, rd64(p));
    h = rotl64(h, 27) * X3_P64_1 + X3_P64_4;
    p += 8;
  }
  if (p + 4 <= end) {
    h ^= (uint64_t)rd32(p) * X3_P64_1;
    h = rotl64(h, 23) * X3_P64_2 + X3_P64_3;
    p += 4;
  }
  while (p < end) {
    h ^= (*p) * X3_P64_5;
    h = rotl64(h, 11) * X3_P64_1;
    p++;
  }
  h ^= h >> 33;
  h *= X3_P64_2;
  h ^= h >> 29;
  h *= X3_P64_3;
  h ^= h >> 32;
  return h;
}
