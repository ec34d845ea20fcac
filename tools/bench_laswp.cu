// bench_laswp.cu: kernels for LU's row interchanges (ex_laswp on the CUDA executor) on the shapes
// LU at n = 40000 with --gpu-mem 8G gives them, timed alone: which one exec_cuda_kernels.cu keeps.
//   v0  one block per column, 256 threads, a segment's rows through shared memory (the kernel
//       of 2026-11-27 to 29)
//   v1  the same, each thread's gathers issued U at a time before they are stored (loads in
//       flight), int64 tables
//   v2  v1 with int32 tables
//   v3  v2, 512 or 1024 threads
//   v4  one entry per thread (segments of at most blockDim / 2 pivots), values in registers,
//       C columns per block
// Pivots as LU on a random matrix makes them: ipiv[k] uniform in [k, rows). The tables are built
// as exec_cuda.c's do_laswp builds them (the net permutation of each segment of SEG pivots).
// Build and run (a GPU host): nvcc -O3 -arch=sm_90 -o /tmp/bench_laswp tools/bench_laswp.cu &&
// /tmp/bench_laswp. Prints one line per shape and kernel: ms (best of 5) and GB/s of the rows
// moved (8 bytes read and written per moved row and column).
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                                 \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

template <typename I>
__global__ void v0(int64_t ncols, double *__restrict__ A, int64_t lda, const I *__restrict__ src,
                   const I *__restrict__ dst, const int64_t *__restrict__ off, int64_t nseg) {
  extern __shared__ double buf[];
  for (int64_t j = blockIdx.x; j < ncols; j += gridDim.x) {
    double *a = A + j * lda;
    for (int64_t s = 0; s < nseg; s++) {
      int64_t t0 = off[s], t1 = off[s + 1];
      for (int64_t t = t0 + threadIdx.x; t < t1; t += blockDim.x) buf[t - t0] = a[src[t]];
      __syncthreads();
      for (int64_t t = t0 + threadIdx.x; t < t1; t += blockDim.x) a[dst[t]] = buf[t - t0];
      __syncthreads();
    }
  }
}

template <typename I, int U>
__global__ void v1(int64_t ncols, double *__restrict__ A, int64_t lda, const I *__restrict__ src,
                   const I *__restrict__ dst, const int64_t *__restrict__ off, int64_t nseg) {
  extern __shared__ double buf[];
  const int bd = blockDim.x;
  for (int64_t j = blockIdx.x; j < ncols; j += gridDim.x) {
    double *a = A + j * lda;
    for (int64_t s = 0; s < nseg; s++) {
      int t0 = (int)off[s], T = (int)(off[s + 1] - off[s]);
      for (int base = threadIdx.x; base < T; base += U * bd) {
        I r[U];
        double v[U];
#pragma unroll
        for (int u = 0; u < U; u++) r[u] = base + u * bd < T ? __ldg(src + t0 + base + u * bd) : 0;
#pragma unroll
        for (int u = 0; u < U; u++) v[u] = base + u * bd < T ? a[r[u]] : 0.0;
#pragma unroll
        for (int u = 0; u < U; u++)
          if (base + u * bd < T) buf[base + u * bd] = v[u];
      }
      __syncthreads();
      for (int base = threadIdx.x; base < T; base += U * bd) {
        I r[U];
#pragma unroll
        for (int u = 0; u < U; u++) r[u] = base + u * bd < T ? __ldg(dst + t0 + base + u * bd) : 0;
#pragma unroll
        for (int u = 0; u < U; u++)
          if (base + u * bd < T) a[r[u]] = buf[base + u * bd];
      }
      __syncthreads();
    }
  }
}

// v4: at most one table entry per thread (a segment of at most blockDim / 2 pivots), the
// values in registers, C columns per block: no shared memory, C loads in flight per thread.
template <int C>
__global__ void v4(int64_t ncols, double *__restrict__ A, int64_t lda,
                   const int64_t *__restrict__ src, const int64_t *__restrict__ dst,
                   const int64_t *__restrict__ off, int64_t nseg) {
  for (int64_t j0 = (int64_t)blockIdx.x * C; j0 < ncols; j0 += (int64_t)gridDim.x * C) {
    double *a = A + j0 * lda;
    int nc = ncols - j0 < C ? (int)(ncols - j0) : C;
    for (int64_t s = 0; s < nseg; s++) {
      int64_t t = off[s] + threadIdx.x;
      bool on = t < off[s + 1];
      int64_t r = on ? __ldg(src + t) : 0, w = on ? __ldg(dst + t) : 0;
      double v[C];
#pragma unroll
      for (int c = 0; c < C; c++) v[c] = on && c < nc ? a[r + c * lda] : 0.0;
      __syncthreads();
#pragma unroll
      for (int c = 0; c < C; c++)
        if (on && c < nc) a[w + c * lda] = v[c];
      __syncthreads();
    }
  }
}

// The best of five timed launches after a warm-up one, in ms.
template <typename F>
static float best_ms(F launch) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float best = 1e30f;
  for (int r = 0; r < 6; r++) {
    CK(cudaEventRecord(e0));
    launch();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (r > 0 && ms < best) best = ms;
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return best;
}

template <int C>
static float run4(int threads, int64_t ncols, double *A, int64_t lda, const int64_t *src,
                  const int64_t *dst, const int64_t *off, int64_t nseg) {
  int64_t blocks = (ncols + C - 1) / C;
  return best_ms([&] {
    v4<C><<<(unsigned)(blocks > 65535 ? 65535 : blocks), threads>>>(ncols, A, lda, src, dst, off,
                                                                    nseg);
  });
}

struct tables {
  std::vector<int64_t> src, dst, off;
  int64_t maxseg = 0, moved = 0;
};

// do_laswp's construction: per segment, the rows touched in order of first touch, the ones that
// moved kept, src = the original row each now holds.
static tables build(int64_t rows, int64_t k1, int64_t k2, const std::vector<int64_t> &ipiv,
                    int64_t seg) {
  tables T;
  std::vector<int64_t> row(rows), gen(rows, -1);
  int64_t nseg = (k2 - k1 + seg - 1) / seg;
  for (int64_t s = 0; s < nseg; s++) {
    int64_t a = k1 + s * seg, b = a + seg < k2 ? a + seg : k2, t0 = (int64_t)T.dst.size();
    std::vector<int64_t> touched;
    for (int64_t k = a; k < b; k++) {
      int64_t p = ipiv[k], u[2] = {k, p};
      for (int i = 0; i < 2; i++)
        if (gen[u[i]] != s) {
          gen[u[i]] = s;
          row[u[i]] = u[i];
          touched.push_back(u[i]);
        }
      int64_t tmp = row[k];
      row[k] = row[p];
      row[p] = tmp;
    }
    for (int64_t r : touched)
      if (row[r] != r) {
        T.src.push_back(row[r]);
        T.dst.push_back(r);
      }
    T.off.push_back(t0);
    int64_t len = (int64_t)T.dst.size() - t0;
    if (len > T.maxseg) T.maxseg = len;
  }
  T.off.push_back((int64_t)T.dst.size());
  T.moved = (int64_t)T.dst.size();
  return T;
}

template <typename K, typename I>
static float run(K kern, int threads, int64_t ncols, double *A, int64_t lda, const I *src,
                 const I *dst, const int64_t *off, int64_t nseg, int64_t maxseg) {
  size_t sm = (size_t)maxseg * sizeof(double);
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm));
  return best_ms([&] {
    kern<<<(unsigned)(ncols > 65535 ? 65535 : ncols), threads, sm>>>(ncols, A, lda, src, dst, off,
                                                                     nseg);
  });
}

int main(int argc, char **argv) {
  int64_t seg = argc > 1 ? atoll(argv[1]) : 2048;
  struct shape {
    const char *name;
    int64_t rows, ncols, k1, k2;
  } shapes[] = {
      {"left pass: P 40000 x 20000, a group of 4000 pivots", 40000, 20000, 8000, 12000},
      {"panel: a 4000-column chunk, 4000 pivots", 40000, 4000, 20000, 24000},
      {"final swaps: a 1000-column tile column, pivots [4000, 40000)", 40000, 1000, 4000, 40000},
  };
  srand(1);
  std::vector<int64_t> ipiv(40000);
  for (int64_t k = 0; k < 40000; k++) ipiv[k] = k + (int64_t)((double)rand() / RAND_MAX * (40000 - k - 1));
  double *A;
  CK(cudaMalloc(&A, (size_t)40000 * 20000 * sizeof(double)));
  CK(cudaMemset(A, 0, (size_t)40000 * 20000 * sizeof(double)));
  printf("segment %lld pivots\n", (long long)seg);
  for (auto &sh : shapes) {
    tables T = build(sh.rows, sh.k1, sh.k2, ipiv, seg);
    int64_t n = (int64_t)T.src.size(), nseg = (int64_t)T.off.size() - 1;
    int64_t *d64, *off;
    int32_t *d32;
    CK(cudaMalloc(&d64, 2 * n * sizeof(int64_t)));
    CK(cudaMalloc(&d32, 2 * n * sizeof(int32_t)));
    CK(cudaMalloc(&off, (nseg + 1) * sizeof(int64_t)));
    std::vector<int32_t> s32(T.src.begin(), T.src.end()), t32(T.dst.begin(), T.dst.end());
    CK(cudaMemcpy(d64, T.src.data(), n * 8, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d64 + n, T.dst.data(), n * 8, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d32, s32.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d32 + n, t32.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(off, T.off.data(), (nseg + 1) * 8, cudaMemcpyHostToDevice));
    double gb = 16.0 * (double)T.moved * (double)sh.ncols / 1e9;
    printf("%s: %lld rows moved in %lld segments (largest %lld), %.2f GB\n", sh.name,
           (long long)T.moved, (long long)nseg, (long long)T.maxseg, gb);
    struct {
      const char *name;
      float ms;
    } r[] = {
        {"v0", run(v0<int64_t>, 256, sh.ncols, A, sh.rows, d64, d64 + n, off, nseg, T.maxseg)},
        {"v1 (U=8)", run(v1<int64_t, 8>, 256, sh.ncols, A, sh.rows, d64, d64 + n, off, nseg, T.maxseg)},
        {"v2 (U=8, int32)", run(v1<int32_t, 8>, 256, sh.ncols, A, sh.rows, d32, d32 + n, off, nseg, T.maxseg)},
        {"v2 (U=4, int32)", run(v1<int32_t, 4>, 256, sh.ncols, A, sh.rows, d32, d32 + n, off, nseg, T.maxseg)},
        {"v3 (U=8, int32, 512 threads)", run(v1<int32_t, 8>, 512, sh.ncols, A, sh.rows, d32, d32 + n, off, nseg, T.maxseg)},
        {"v3 (U=4, int32, 1024 threads)", run(v1<int32_t, 4>, 1024, sh.ncols, A, sh.rows, d32, d32 + n, off, nseg, T.maxseg)},
    };
    for (auto &x : r) printf("  %-32s %8.3f ms %8.1f GB/s\n", x.name, x.ms, gb / (x.ms / 1e3));
    if (T.maxseg <= 1024) { // v4 needs an entry per thread at most
      int th = T.maxseg <= 512 ? 512 : 1024;
      struct {
        const char *name;
        float ms;
      } q[] = {
          {"v4 (registers, 1 column)", run4<1>(th, sh.ncols, A, sh.rows, d64, d64 + n, off, nseg)},
          {"v4 (registers, 2 columns)", run4<2>(th, sh.ncols, A, sh.rows, d64, d64 + n, off, nseg)},
          {"v4 (registers, 4 columns)", run4<4>(th, sh.ncols, A, sh.rows, d64, d64 + n, off, nseg)},
          {"v4 (registers, 8 columns)", run4<8>(th, sh.ncols, A, sh.rows, d64, d64 + n, off, nseg)},
      };
      for (auto &x : q)
        printf("  %-32s %8.3f ms %8.1f GB/s (%d threads)\n", x.name, x.ms, gb / (x.ms / 1e3), th);
    }
    CK(cudaFree(d64));
    CK(cudaFree(d32));
    CK(cudaFree(off));
  }
  CK(cudaFree(A));
  return 0;
}
