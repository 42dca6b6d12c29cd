/* Does a row of C = alpha * A * B^T come out of OpenBLAS with the same bits
 * whatever the height of the row tile it is computed in? gw's cost estimate
 * once computed Λ's cross term by one GEMM per 64-row tile, so that the same
 * calls, hence the same bits, happened on any rank count; a tile height that
 * followed the rank count would have needed the answer to be yes on every
 * machine. It is not (OPENBLAS_CORETYPE=Haswell), so gw now computes Λ with
 * ot::PointCostMatrix, whose entries do not depend on the tiling at all.
 *
 *   gcc -O2 perf/gw/gemm_tile_heights.c -o /tmp/gemm_tile_heights -lopenblas
 *   OPENBLAS_NUM_THREADS=1 /tmp/gemm_tile_heights [K N]      (default K = 200 anchors, N = 4096)
 *   OPENBLAS_CORETYPE=Haswell OPENBLAS_NUM_THREADS=1 /tmp/gemm_tile_heights
 *
 * For each height h in 1..64 it computes a 64-row block as tiles of h rows
 * (the last one shorter) and counts the heights where some entry's bits differ
 * from one 64-row call, in float and in double, then lists the heights that
 * give the same bits. Exit status 0 whatever it finds. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TILE_TEST(T, GEMM)                                                                              \
  static int differing_heights_##T(int k, int n, char* same) {                                          \
    const int rows = 64;                                                                                \
    T *a = malloc(sizeof(T) * rows * k), *b = malloc(sizeof(T) * n * k);                                \
    T *whole = malloc(sizeof(T) * rows * n), *tiled = malloc(sizeof(T) * rows * n);                     \
    srand(1);                                                                                           \
    for (int i = 0; i < rows * k; ++i) a[i] = (T)rand() / RAND_MAX;                                     \
    for (int i = 0; i < n * k; ++i) b[i] = (T)rand() / RAND_MAX;                                        \
    GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, rows, n, k, (T)-0.01, a, k, b, k, (T)0, whole, n);   \
    int differing = 0;                                                                                  \
    for (int h = 1; h <= rows; ++h) {                                                                   \
      for (int r0 = 0; r0 < rows; r0 += h) {                                                            \
        const int count = r0 + h <= rows ? h : rows - r0;                                               \
        GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, count, n, k, (T)-0.01, a + r0 * k, k, b, k, (T)0, \
             tiled + r0 * n, n);                                                                        \
      }                                                                                                 \
      int entries = 0;                                                                                  \
      for (int i = 0; i < rows * n; ++i) entries += memcmp(&whole[i], &tiled[i], sizeof(T)) != 0;       \
      if (entries)                                                                                      \
        ++differing;                                                                                    \
      else                                                                                              \
        sprintf(same + strlen(same), " %d", h);                                                         \
    }                                                                                                   \
    free(a), free(b), free(whole), free(tiled);                                                         \
    return differing;                                                                                   \
  }

TILE_TEST(float, cblas_sgemm)
TILE_TEST(double, cblas_dgemm)

int main(int argc, char** argv) {
  const int k = argc > 1 ? atoi(argv[1]) : 200, n = argc > 2 ? atoi(argv[2]) : 4096;
  if (k < 1 || n < 1) {
    fprintf(stderr, "usage: %s [K N] (positive)\n", argv[0]);
    return 2;
  }
  char same_float[256] = "", same_double[256] = "";
  const int float_differ = differing_heights_float(k, n, same_float);
  const int double_differ = differing_heights_double(k, n, same_double);
  printf("K = %d, N = %d: tile heights (of 64) whose rows differ from one 64-row call: float %d, double %d\n", k, n,
         float_differ, double_differ);
  printf("the same bits as one call: float at%s; double at%s\n", same_float, same_double);
  return 0;
}
