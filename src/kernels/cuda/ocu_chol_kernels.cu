// ocu_chol_kernels.cu: the one kernel the CUDA Cholesky executor needs beyond cuBLAS/cuSOLVER.
// Column-major FP64, 64-bit indices; the launcher returns the launch's error.
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int kTile = 32;
constexpr int kRows = 8;

// The strict upper triangle of the w x w matrix A: the lower triangle's transpose (full != 0)
// or zero. One 32 x 32 tile per block, through shared memory so both the read of the lower tile
// and the write of the upper one are coalesced; tiles wholly below the diagonal exit at once.
__global__ void mirror(double *__restrict__ A, int64_t lda, int64_t w, int full) {
  __shared__ double t[kTile][kTile + 1];
  int64_t bi = blockIdx.y, bj = blockIdx.x; // the upper tile (bi, bj), bi <= bj
  if (bi > bj) return;
  int64_t i0 = bi * kTile, j0 = bj * kTile;
  if (full) { // read lower tile (bj, bi): rows j0.., columns i0..
    for (int r = threadIdx.y; r < kTile; r += kRows) {
      int64_t row = j0 + threadIdx.x, col = i0 + r;
      t[r][threadIdx.x] = (row < w && col < w) ? A[row + col * lda] : 0.0;
    }
    __syncthreads();
  }
  for (int r = threadIdx.y; r < kTile; r += kRows) {
    int64_t row = i0 + threadIdx.x, col = j0 + r;
    if (row < w && col < w && row < col) A[row + col * lda] = full ? t[threadIdx.x][r] : 0.0;
  }
}

} // namespace

extern "C" cudaError_t ocu_chol_mirror(double *A, int64_t lda, int64_t w, int full,
                                       cudaStream_t s) {
  if (w <= 1) return cudaSuccess;
  int64_t nt = (w + kTile - 1) / kTile;
  if (nt > 65535) return cudaErrorInvalidValue; // w > 2 million: beyond any device memory
  dim3 grid((unsigned)nt, (unsigned)nt), block(kTile, kRows);
  mirror<<<grid, block, 0, s>>>(A, lda, w, full);
  return cudaGetLastError();
}
