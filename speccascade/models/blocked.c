/* Y = X W^T (+ bias) for a few rows X, with W stored in column blocks of 16.

   Why: a speculative verification multiplies 2-8 rows by every weight of the verifier. On CPU,
   MKL's float32 product of so few rows runs far below the machine's peak, so verifying 8
   tokens cost about twice one token's step, though both are bound by reading the weights
   once. Here each weight is read once per 8 rows, in the order it is stored, with a software
   prefetch ahead of the stream: 1 to 8 rows cost about one row.

   Layout: W[n][k] (PyTorch's [out, in]) is stored as B[nb][k][16] = W[16 nb + j][k], padded
   with zero rows to a multiple of 16. Every output is summed in k order by one vector lane,
   whatever the number of rows: a row's result does not depend on the rows beside it.

   Portable C: GCC/Clang vector extensions, compiled on first use with -march=native
   (speccascade/models/blocked.py); OpenMP splits the column blocks over threads. */
#include <omp.h>
#include <stddef.h>

typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4)));

#define LANES 16
#define ROWS 8       /* rows per pass over the weights */
#define PREFETCH 48 /* k steps (of 64 bytes) ahead the stream is prefetched: blocked.py pads */

/* Rows x (rows <= ROWS) times `cols` (1 or 2) adjacent column blocks starting at block b:
   two weight streams at once keep more loads in flight and share each broadcast of x. */
static inline void pass(const float *x, int k_dim, const float *b, float *y, int ld_y, int n0,
                        int valid, const float *bias, const int rows, const int cols) {
    v16 acc[2][ROWS];
    for (int c = 0; c < cols; c++)
        for (int m = 0; m < rows; m++) acc[c][m] = (v16){0};
    for (int k = 0; k < k_dim; k++) {
        v16 w[2];
        for (int c = 0; c < cols; c++) {
            const float *bc = b + (size_t)c * k_dim * LANES;
            __builtin_prefetch(bc + (size_t)(k + PREFETCH) * LANES, 0, 3);
            w[c] = *(const v16u *)(bc + (size_t)k * LANES);
        }
        for (int m = 0; m < rows; m++) {
            float xm = x[(size_t)m * k_dim + k];
            for (int c = 0; c < cols; c++) acc[c][m] += w[c] * xm;
        }
    }
    for (int c = 0; c < cols; c++)
        for (int m = 0; m < rows; m++) {
            float *out = y + (size_t)m * ld_y + n0 + c * LANES;
            const float *bb = bias ? bias + n0 + c * LANES : 0;
            for (int j = 0; j < LANES && c * LANES + j < valid; j++)
                out[j] = acc[c][m][j] + (bb ? bb[j] : 0.0f);
        }
}

#define ROWS_CASE(R)                                                                          \
    case R:                                                                                   \
        for (nb = lo; nb + 1 < hi; nb += 2)                                                   \
            pass(x, k_dim, b + (size_t)nb * k_dim * LANES, y, n_dim, nb * LANES,               \
                 n_dim - nb * LANES, bias, R, 2);                                             \
        if (nb < hi)                                                                          \
            pass(x, k_dim, b + (size_t)nb * k_dim * LANES, y, n_dim, nb * LANES,               \
                 n_dim - nb * LANES, bias, R, 1);                                             \
        break;

static void blocks(const float *x, int rows, int k_dim, const float *b, int n_dim, float *y,
                   const float *bias, int lo, int hi) {
    int nb;
    switch (rows) { ROWS_CASE(1) ROWS_CASE(2) ROWS_CASE(3) ROWS_CASE(4)
                    ROWS_CASE(5) ROWS_CASE(6) ROWS_CASE(7) ROWS_CASE(8) }
}

/* x: [rows, k_dim], b: the blocked weight, y: [rows, n_dim], bias: [n_dim] or NULL. */
void speccascade_blocked_linear(const float *x, int rows, int k_dim, const float *b, int n_dim,
                                float *y, const float *bias, int threads) {
    int n_blocks = (n_dim + LANES - 1) / LANES;
    for (int r0 = 0; r0 < rows; r0 += ROWS) {
        int r = rows - r0 < ROWS ? rows - r0 : ROWS;
        const float *xr = x + (size_t)r0 * k_dim;
        float *yr = y + (size_t)r0 * n_dim;
#pragma omp parallel num_threads(threads)
        {
            int t = omp_get_thread_num(), n_threads = omp_get_num_threads();
            blocks(xr, r, k_dim, b, n_dim, yr, bias, (int)((long)n_blocks * t / n_threads),
                   (int)((long)n_blocks * (t + 1) / n_threads));
        }
    }
}
