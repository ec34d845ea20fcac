// ocu_chol_kernels.cu: the one kernel the CUDA Cholesky executor needs beyond cuBLAS/cuSOLVER.
// Column-major FP64, 64-bit indices; the launcher returns the launch's error.
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int kTile = 32;
constexpr int kRows = 8;

// Columns [j0, j1) of A above the diagonal (rows i < j): the transpose of S's lower triangle,
// A[i + j lda] = S[j + i lds] (full != 0), or zero. S may be A itself (the upper triangle is
// then filled from the lower one: no element is both read and written). One 32 x 32 tile per
// block, through shared memory so both the read of the lower tile and the write of the upper
// one are coalesced; tiles wholly below the diagonal or outside [j0, j1) exit at once.
__global__ void upper(double *__restrict__ A, int64_t lda, const double *S, int64_t lds,
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

} // namespace

extern "C" cudaError_t ocu_chol_upper(double *A, int64_t lda, const double *S, int64_t lds,
                                      int64_t j0, int64_t j1, int full, cudaStream_t s) {
  if (j1 <= j0 || j1 <= 1) return cudaSuccess;
  int64_t nx = (j1 - 1) / kTile - j0 / kTile + 1, ny = (j1 + kTile - 1) / kTile;
  if (nx > 65535 || ny > 65535) return cudaErrorInvalidValue; // > 2 million: beyond any device
  dim3 grid((unsigned)nx, (unsigned)ny), block(kTile, kRows);
  upper<<<grid, block, 0, s>>>(A, lda, S, lds, j0, j1, full);
  return cudaGetLastError();
}
