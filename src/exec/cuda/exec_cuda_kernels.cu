// exec_cuda_kernels.cu: the few kernels the CUDA executor (exec_cuda.c) needs beyond cuBLAS and
// cuSOLVER: fill, |A|'s scan (ex_absscan), row interchanges on 64-bit 0-based pivots, the small
// copies to and from the pinned ring, the info of a factorization, a unit triangle's diagonal
// set aside for trtri, and the mirror of a lower triangle (ex_mirror).
// Column-major FP64, 64-bit indices; every launcher returns the launch's error. (Transpose is
// cuBLAS's geam; getri's split of the lower triangle is ocu_kernels.cu's.)
#include <cuda_runtime.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>

namespace {

constexpr int kThreads = 256;

__global__ void fill(int64_t m, int64_t n, double v, double *__restrict__ A, int64_t lda) {
  for (int64_t j = blockIdx.y; j < n; j += gridDim.y)
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < m;
         i += (int64_t)gridDim.x * blockDim.x)
      A[i + j * lda] = v;
}

// ex_absscan (base/absscan.h's contract, the same bits): a block owns kScanR rows and walks
// their columns kScanC at a time. All its threads load a kScanR x kScanC piece of |A| into
// shared memory (coalesced, kScanC * kScanR / kThreads loads in flight per thread), then one
// thread per row adds the piece's columns to its sum in column order, so rowsum[i] is the
// sequential sum the host makes. The largest magnitude per thread (NaN never wins: `v > m`),
// then per warp and block, then one atomicMax per block on mx's bits (for doubles >= 0 the
// order of the bit patterns as int64 is the order of the values).
// Why not a thread per row walking its row: 40000 rows make 157 blocks of one load in flight
// per column, and a 40000 x 1000 scan took 3.3 ms on an H200 beside LU's gemms (the trace of
// 2026-11-29), on the copy queues, which waited behind it.
constexpr int kScanR = 64, kScanC = 32, kStep = kThreads / kScanR, kPer = kScanC / kStep;
static_assert(kThreads % kScanR == 0 && kScanC % kStep == 0, "scan piece");
__global__ void absscan(int64_t m, int64_t n, const double *__restrict__ A, int64_t lda,
                        int64_t top, double *__restrict__ mx, double *__restrict__ rowsum) {
  __shared__ double piece[kScanC][kScanR];
  const int r = threadIdx.x % kScanR, c0 = threadIdx.x / kScanR;
  const int64_t i0 = blockIdx.x * (int64_t)kScanR, i = i0 + r;
  const bool mine = threadIdx.x < kScanR && i < m; // this thread sums row i
  double mt = 0.0, s = mine && rowsum ? rowsum[i] : 0.0;
  // column j holds row i when top < 0 or i <= top + j: row i's first column, and the block's
  const int64_t first = top < 0 || i <= top ? 0 : i - top;
  const int64_t jlo = top < 0 || i0 <= top ? 0 : i0 - top;
  for (int64_t j0 = jlo; j0 < n; j0 += kScanC) {
    double v[kPer]; // every load of the piece issued before the first store
#pragma unroll
    for (int k = 0; k < kPer; k++) {
      const int64_t j = j0 + c0 + k * kStep;
      v[k] = i < m && j < n && j >= first ? fabs(A[i + j * lda]) : 0.0;
    }
#pragma unroll
    for (int k = 0; k < kPer; k++) {
      piece[c0 + k * kStep][r] = v[k];
      mt = v[k] > mt ? v[k] : mt;
    }
    __syncthreads();
    if (mine) {
      const int64_t cn = n - j0 < kScanC ? n - j0 : kScanC;
      for (int c = 0; c < cn; c++)
        if (j0 + c >= first) s += piece[c][r];
    }
    __syncthreads();
  }
  if (mine && rowsum) rowsum[i] = s;
  for (int o = 16; o > 0; o >>= 1) {
    double v = __shfl_down_sync(0xffffffffu, mt, o);
    mt = v > mt ? v : mt;
  }
  __shared__ double wm[kThreads / 32];
  if ((threadIdx.x & 31) == 0) wm[threadIdx.x >> 5] = mt;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / 32; w++) mt = wm[w] > mt ? wm[w] : mt;
    if (mt > 0.0)
      atomicMax(reinterpret_cast<unsigned long long *>(mx), __double_as_longlong(mt));
  }
}

// LAPACK's dlaset: lower (strictly below, 'L'), upper ('U') or every off-diagonal element
// (mode 0) := alpha, the diagonal := beta.
__global__ void laset(int mode, int64_t m, int64_t n, double alpha, double beta,
                      double *__restrict__ A, int64_t lda) {
  for (int64_t j = blockIdx.y; j < n; j += gridDim.y)
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < m;
         i += (int64_t)gridDim.x * blockDim.x) {
      if ((mode == 1 && i < j) || (mode == 2 && i > j)) continue;
      A[i + j * lda] = i == j ? beta : alpha;
    }
}

// LAPACK's laswp as the net row permutation, segment by segment (exec_cuda.c's do_laswp turns the
// pivots into it on the host): in segment s, entries t in [off[s], off[s+1]) say that row dst[t]
// receives the value row src[t] held before the segment. A segment has at most blockDim entries
// (do_laswp's LASWP_SEG pivots touch at most twice as many rows): each thread holds its entry's
// value in a register between the block's reads and its writes, so every (column, row) moves in
// parallel. The rows are scattered, so each read or write is a sector of its own and the kernel
// is bound by how many are in flight. On LU's shapes at n = 40000 on an H200 this form moved
// 716-1164 GB/s where the one before (segments of 2048 pivots through shared memory, 256
// threads a block) moved 327-442; two or more columns a block (more loads in flight per
// thread, fewer blocks) were slower, 357-740 (the variants' bench, since removed: `git show
// 32c5ee3:tools/bench_laswp.cu`; bench_exec's laswp lines time this kernel as LU calls it).
// The sequential form (one thread per column through every swap) took 12.7 ms a call at
// n = 49152 (exec_cuda.c).
__global__ void permute_rows(int64_t ncols, double *__restrict__ A, int64_t lda,
                             const int64_t *__restrict__ src, const int64_t *__restrict__ dst,
                             const int64_t *__restrict__ off, int64_t nseg) {
  for (int64_t j = blockIdx.x; j < ncols; j += gridDim.x) {
    double *a = A + j * lda;
    for (int64_t s = 0; s < nseg; s++) {
      int64_t t = off[s] + threadIdx.x;
      bool on = t < off[s + 1];
      double v = on ? a[src[t]] : 0.0;
      __syncthreads();
      if (on) a[dst[t]] = v;
      __syncthreads();
    }
  }
}

// The executor's small copies between the device and its pinned ring (exec_cuda.c `small_copy`),
// done by the SMs through the ring's mapping instead of a copy engine: an engine serves the
// copies that reach it in order, so a getrf's 32 KB of pivots or a laswp's table queued on the
// compute stream behind a gigabyte of tiles on another stream waited 2-14 ms, with the compute
// stream idle (H200 trace of LU at n = 40000). m x n 8-byte words, column-major; the words are
// moved as bits. A store to host memory is fenced system-wide before the kernel ends, for the
// host function queued after it.
__global__ void copy_words(int64_t m, int64_t n, const unsigned long long *__restrict__ s,
                           int64_t lds, unsigned long long *__restrict__ d, int64_t ldd,
                           int to_host) {
  int64_t total = m * n;
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
       t += (int64_t)gridDim.x * blockDim.x) {
    int64_t i = t % m, j = t / m;
    d[i + j * ldd] = s[i + j * lds];
  }
  if (to_host) __threadfence_system();
}

// *out := the info of a factorization, as ops.h defines it: the smallest of cuSOLVER's (cuinfo,
// when given and > 0) and 1 + the first j < n whose diagonal entry is bad for `mode` (0: none
// checked; 1: exactly zero, getri/trtri; 2: not positive and finite, potrf's NaN/Inf rule that
// cuSOLVER need not apply), else 0; a negative cuinfo (an invalid argument) is passed on. One block.
__global__ void diag_info(const double *__restrict__ A, int64_t lda, int64_t n, int mode,
                          const int *__restrict__ cuinfo, int64_t *__restrict__ out) {
  __shared__ long long best[kThreads];
  long long b = LLONG_MAX;
  if (mode)
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      double d = A[j + j * lda];
      bool bad = mode == 1 ? d == 0.0 : !(d > 0.0 && isfinite(d));
      if (bad) {
        b = j + 1;
        break;
      }
    }
  best[threadIdx.x] = b;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s && best[threadIdx.x + s] < best[threadIdx.x])
      best[threadIdx.x] = best[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    long long r = best[0];
    if (cuinfo && *cuinfo > 0 && *cuinfo < r) r = *cuinfo;
    if (r == LLONG_MAX) r = 0;
    if (cuinfo && *cuinfo < 0) r = *cuinfo;
    *out = r;
  }
}

// The diagonal of A to save[] and ones in its place (restore == 0), or back (restore != 0):
// cusolverDnXtrtri was seen to invert a unit triangle's stored diagonal all the same (an H100,
// CUDA 13: trtri('L', 'U') of a 1 x 1 block returned 1/a), so the executor inverts a unit
// triangle as a non-unit one whose diagonal it has set to 1, then puts the diagonal back.
__global__ void diag_swap(double *__restrict__ A, int64_t lda, int64_t n, double *__restrict__ save,
                          int restore) {
  for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < n;
       j += (int64_t)gridDim.x * blockDim.x) {
    if (restore) {
      A[j + j * lda] = save[j];
    } else {
      save[j] = A[j + j * lda];
      A[j + j * lda] = 1.0;
    }
  }
}

// Columns [j0, j1) of A above the diagonal (rows i < j): the transpose of S's lower triangle,
// A[i + j lda] = S[j + i lds] (full != 0), or zero (ex_mirror). S may be A itself (no element is
// both read and written). One 32 x 32 tile per block, through shared memory so both the read of
// the lower tile and the write of the upper one are coalesced; tiles wholly below the diagonal
// or outside [j0, j1) exit at once.
constexpr int kTile = 32;
constexpr int kRows = 8;
__global__ void mirror(double *__restrict__ A, int64_t lda, const double *S, int64_t lds,
                       int64_t j0, int64_t j1, int full) {
  __shared__ double t[kTile][kTile + 1];
  int64_t i0 = (int64_t)blockIdx.y * kTile, c0 = (j0 / kTile + blockIdx.x) * kTile;
  if (i0 > c0 + kTile - 1 || i0 >= j1) return;
  if (full) { // read S's lower tile (rows c0.., columns i0..)
    for (int r = threadIdx.y; r < kTile; r += kRows) {
      int64_t row = c0 + threadIdx.x, col = i0 + r;
      t[r][threadIdx.x] = (row < j1 && row >= j0 && col < row) ? S[row + col * lds] : 0.0;
    }
    __syncthreads();
  }
  for (int r = threadIdx.y; r < kTile; r += kRows) {
    int64_t row = i0 + threadIdx.x, col = c0 + r;
    if (col >= j0 && col < j1 && row < col) A[row + col * lda] = full ? t[threadIdx.x][r] : 0.0;
  }
}

}  // namespace

extern "C" cudaError_t exc_mirror(double *A, int64_t lda, const double *S, int64_t lds,
                                  int64_t j0, int64_t j1, int full, cudaStream_t s) {
  if (j1 <= j0 || j1 <= 1) return cudaSuccess;
  int64_t nx = (j1 - 1) / kTile - j0 / kTile + 1, ny = (j1 + kTile - 1) / kTile;
  if (nx > 65535 || ny > 65535) return cudaErrorInvalidValue; // > 2 million: beyond any device
  dim3 grid((unsigned)nx, (unsigned)ny), block(kTile, kRows);
  mirror<<<grid, block, 0, s>>>(A, lda, S, lds, j0, j1, full);
  return cudaGetLastError();
}

extern "C" cudaError_t exc_diag_swap(double *A, int64_t lda, int64_t n, double *save, int restore,
                                     cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  int64_t g = (n + kThreads - 1) / kThreads;
  diag_swap<<<(unsigned)(g > 1024 ? 1024 : g), kThreads, 0, s>>>(A, lda, n, save, restore);
  return cudaGetLastError();
}

extern "C" cudaError_t exc_fill(int64_t m, int64_t n, double v, double *A, int64_t lda,
                                cudaStream_t s) {
  if (m <= 0 || n <= 0) return cudaSuccess;
  int64_t gx = (m + kThreads - 1) / kThreads;
  dim3 g((unsigned)(gx > 1024 ? 1024 : gx), (unsigned)(n > 65535 ? 65535 : n));
  fill<<<g, kThreads, 0, s>>>(m, n, v, A, lda);
  return cudaGetLastError();
}

extern "C" cudaError_t exc_absscan(int64_t m, int64_t n, const double *A, int64_t lda,
                                   int64_t top, double *mx, double *rowsum, cudaStream_t s) {
  if (m <= 0 || n <= 0) return cudaSuccess;
  int64_t g = (m + kScanR - 1) / kScanR; // m < 2^31 rows: a device column fits in memory
  absscan<<<(unsigned)g, kThreads, 0, s>>>(m, n, A, lda, top, mx, rowsum);
  return cudaGetLastError();
}

extern "C" cudaError_t exc_laset(char uplo, int64_t m, int64_t n, double alpha, double beta,
                                 double *A, int64_t lda, cudaStream_t s) {
  if (m <= 0 || n <= 0) return cudaSuccess;
  int mode = (uplo == 'L' || uplo == 'l') ? 1 : (uplo == 'U' || uplo == 'u') ? 2 : 0;
  int64_t gx = (m + kThreads - 1) / kThreads;
  dim3 g((unsigned)(gx > 1024 ? 1024 : gx), (unsigned)(n > 65535 ? 65535 : n));
  laset<<<g, kThreads, 0, s>>>(mode, m, n, alpha, beta, A, lda);
  return cudaGetLastError();
}

extern "C" cudaError_t exc_permute_rows(int64_t ncols, double *A, int64_t lda, const int64_t *src,
                                        const int64_t *dst, const int64_t *off, int64_t nseg,
                                        int64_t maxseg, cudaStream_t s) {
  if (ncols <= 0 || nseg <= 0 || maxseg <= 0) return cudaSuccess;
  if (maxseg > 1024) return cudaErrorInvalidValue; /* (do_laswp's segments hold at most 1024) */
  unsigned threads = (unsigned)((maxseg + 31) / 32 * 32);
  permute_rows<<<(unsigned)(ncols > 65535 ? 65535 : ncols), threads, 0, s>>>(ncols, A, lda, src,
                                                                           dst, off, nseg);
  return cudaGetLastError();
}


extern "C" cudaError_t exc_copy_words(int64_t m, int64_t n, const void *s, int64_t lds, void *d,
                                      int64_t ldd, int to_host, cudaStream_t st) {
  if (m <= 0 || n <= 0) return cudaSuccess;
  int64_t blocks = (m * n + kThreads - 1) / kThreads;
  copy_words<<<(unsigned)(blocks > 64 ? 64 : blocks), kThreads, 0, st>>>(
      m, n, static_cast<const unsigned long long *>(s), lds, static_cast<unsigned long long *>(d),
      ldd, to_host);
  return cudaGetLastError();
}

extern "C" cudaError_t exc_diag_info(const double *A, int64_t lda, int64_t n, int mode,
                                     const int *cuinfo, int64_t *out, cudaStream_t s) {
  diag_info<<<1, kThreads, 0, s>>>(A, lda, n > 0 ? n : 0, mode, cuinfo, out);
  return cudaGetLastError();
}

// Load the module now (lazy loading would load it at the first launch, waiting for the work in
// flight: see ocu_preload).
extern "C" cudaError_t exc_preload(void) {
  cudaFuncAttributes a;
  cudaError_t e = cudaFuncGetAttributes(&a, fill);
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, permute_rows);
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, copy_words);
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, diag_info);
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, diag_swap);
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, mirror);
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, absscan);
  return e;
}
