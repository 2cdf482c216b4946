// OpenCL twin of kjit's `gemm` (issue 18): c[m x n] = a[m x k] * b[k x n], row-major, f16 inputs,
// f32 accumulation and output, on the matrix cores (`__builtin_amdgcn_mfma_f32_32x32x8f16`,
// gfx90a and gfx942). Written as a competent HIP programmer would:
//
// - Workgroup of 256 work-items (4 waves) computes a 128 x 128 tile of c (or 256 x 64, 64 x 256:
//   WAVES_M below); each wave a 64 x 64 part as 2 x 2 blocks of 32 x 32 MFMA accumulators (64
//   f32 registers per lane).
// - Per step of BK = 32 along k, the a tile (128 x 32) and the b tile (32 x 128, stored
//   transposed, column-major) are staged in LDS, 20 KiB, rows padded by 8 halves so that the
//   fragment reads (ds_read_b128, 8 lanes per pass, rows 80 bytes apart) hit distinct banks.
// - The next step's tiles are loaded from global memory into registers while the MFMAs of the
//   current step run (one LDS buffer, two barriers per step; 20 KiB lets three workgroups share
//   a CU, so one workgroup's barrier is covered by the others' MFMAs).
// - The sum over k is order-free, so each lane takes 16 consecutive k of its row (a) or column
//   (b) out of LDS in two 16-byte reads: in MFMA substep s, lane half h holds k = 16h + 4s .. +3
//   for both a and b, which together cover the 32 k of the step once.
//
// Launch: block [256, 1, 1], grid [ceil(n / BN), ceil(m / BM), 1].
// Edges: tiles that cross the matrix edges (or rows not 16-byte aligned: k % 8 != 0, n % 4 != 0)
// are loaded element by element with zeros outside the matrices; stores are guarded.
// Targets without matrix cores (gfx900) compute the same per-lane outputs with FMAs, so the twin
// builds for every target of the twin machinery.
//
// Same argument ABI as the kjit kernels: every buffer is a pointer followed by its length in
// elements (uint); scalars by value. Out-of-range loads give 0, out-of-range stores are dropped.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

// The four waves of a workgroup are WAVES_M x (4 / WAVES_M) wave tiles of 64 x 64 (clang
// -DWAVES_M=1, 2 or 4: 64 x 256, 128 x 128 (default) or 256 x 64 tiles of c).
#ifndef WAVES_M
#define WAVES_M 2u
#endif
// 32 x 32 accumulator blocks per wave: BLOCKS_M x BLOCKS_N (clang -DBLOCKS_N=4: 64 x 128 per
// wave, fewer LDS reads per MFMA, twice the accumulators).
#ifndef BLOCKS_M
#define BLOCKS_M 2u
#endif
#ifndef BLOCKS_N
#define BLOCKS_N 2u
#endif
#define WAVES_N (4u / WAVES_M)
#define BM (32u * BLOCKS_M * WAVES_M)
#define BN (32u * BLOCKS_N * WAVES_N)
#define BK 32u
#define LDS_STRIDE (BK + 8u) // halves per row of a tile in LDS
#define THREADS 256u
// Per k step, a work-item moves A_CHUNKS pieces of 8 halves of an a row and B_BLOCKS 4 x 4
// blocks of b (the last round may leave some work-items idle). Four neighbouring lanes load one
// 64-byte row of a, so one load instruction touches 16 cache lines rather than 32.
#define A_PIECES (BM * BK / 8u)
#define B_PIECES (BK * BN / 16u)
#define A_CHUNKS ((A_PIECES + THREADS - 1u) / THREADS)
#define B_BLOCKS ((B_PIECES + THREADS - 1u) / THREADS)

#if defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
#define HAS_MFMA 1
#endif

#include "barrier.h"

// One work-item's share of a k step, in registers between the global load and the LDS store:
// pieces of 8 halves of one a row (piece p: row p / 4, k = k0 + 8 (p % 4) ..), and 4 x 4
// blocks of b (block q: rows k0 + 4 (q / (BN / 4)) .., columns 4 (q % (BN / 4)) ..).
typedef struct {
  half8 a[A_CHUNKS];
  half4 b[B_BLOCKS][4];
} Staged;

static inline half ld_a(global const half* a, uint a_len, uint m, uint k, uint r, uint c) {
  uint i = r * k + c;
  return (r < m && c < k && i < a_len) ? a[i] : (half)0.0h;
}

static inline half ld_b(global const half* b, uint b_len, uint k, uint n, uint r, uint c) {
  uint i = r * n + c;
  return (r < k && c < n && i < b_len) ? b[i] : (half)0.0h;
}

// Loads the tiles of step `k0` into registers. `fast`: the whole tile is inside the matrices and
// the rows are aligned for vector loads.
static inline Staged load_step(global const half* a, uint a_len, global const half* b,
                               uint b_len, uint m, uint n, uint k, uint row0, uint col0,
                               uint k0, bool fast) {
  uint t = __builtin_amdgcn_workitem_id_x();
  Staged s;
#pragma unroll
  for (uint j = 0; j < A_CHUNKS; j++) {
    uint p = t + j * THREADS;
    if (p >= A_PIECES) break;
    uint ar = row0 + p / 4u, ac = k0 + (p % 4u) * 8u;
    if (fast) {
      s.a[j] = *(global const half8*)(a + ar * k + ac);
    } else {
      half v[8];
      for (uint c = 0; c < 8u; c++) v[c] = ld_a(a, a_len, m, k, ar, ac + c);
      s.a[j] = (half8)(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
    }
  }
#pragma unroll
  for (uint j = 0; j < B_BLOCKS; j++) {
    uint q = t + j * THREADS;
    if (q >= B_PIECES) break;
    uint br = k0 + (q / (BN / 4u)) * 4u, bc = col0 + (q % (BN / 4u)) * 4u;
#pragma unroll
    for (uint r = 0; r < 4u; r++)
      s.b[j][r] = fast ? *(global const half4*)(b + (br + r) * n + bc)
                       : (half4)(ld_b(b, b_len, k, n, br + r, bc),
                                 ld_b(b, b_len, k, n, br + r, bc + 1u),
                                 ld_b(b, b_len, k, n, br + r, bc + 2u),
                                 ld_b(b, b_len, k, n, br + r, bc + 3u));
  }
  return s;
}

// Stores the staged tiles into LDS: a row-major, b transposed (4 k-values of one column per
// 8-byte write).
static inline void store_step(local half* as, local half* bs, Staged s) {
  uint t = __builtin_amdgcn_workitem_id_x();
#pragma unroll
  for (uint j = 0; j < A_CHUNKS; j++) {
    uint p = t + j * THREADS;
    if (p >= A_PIECES) break;
    *(local half8*)(as + (p / 4u) * LDS_STRIDE + (p % 4u) * 8u) = s.a[j];
  }
#pragma unroll
  for (uint j = 0; j < B_BLOCKS; j++) {
    uint q = t + j * THREADS;
    if (q >= B_PIECES) break;
    uint kb = (q / (BN / 4u)) * 4u, nb = (q % (BN / 4u)) * 4u;
    half4 r0 = s.b[j][0], r1 = s.b[j][1], r2 = s.b[j][2], r3 = s.b[j][3];
    *(local half4*)(bs + (nb + 0u) * LDS_STRIDE + kb) = (half4)(r0.s0, r1.s0, r2.s0, r3.s0);
    *(local half4*)(bs + (nb + 1u) * LDS_STRIDE + kb) = (half4)(r0.s1, r1.s1, r2.s1, r3.s1);
    *(local half4*)(bs + (nb + 2u) * LDS_STRIDE + kb) = (half4)(r0.s2, r1.s2, r2.s2, r3.s2);
    *(local half4*)(bs + (nb + 3u) * LDS_STRIDE + kb) = (half4)(r0.s3, r1.s3, r2.s3, r3.s3);
  }
}

// Exactly 256 work-items (HIP's __launch_bounds__(256)): one wave per SIMD may use the whole
// register file, where the twins' usual (1, 1024) would cap it at 128 and spill the larger tiles.
__attribute__((amdgpu_flat_work_group_size(256, 256), amdgpu_waves_per_eu(2)))
kernel void gemm(global const half* a, uint a_len,
                 global const half* b, uint b_len,
                 global float* c, uint c_len,
                 uint m, uint n, uint k) {
  local half as[BM * LDS_STRIDE];
  local half bs[BN * LDS_STRIDE];
  uint t = __builtin_amdgcn_workitem_id_x();
  uint lane = t % 64u, wave = t / 64u;
  uint row0 = __builtin_amdgcn_workgroup_id_y() * BM;
  uint col0 = __builtin_amdgcn_workgroup_id_x() * BN;
  // The wave's 64 x 64 quarter of the tile.
  uint wr = (wave / WAVES_N) * (32u * BLOCKS_M), wc = (wave % WAVES_N) * (32u * BLOCKS_N);
  // The lane's row of a (column of b) in each 32-row block, and the 16 k it takes.
  uint li = lane % 32u, lk = (lane / 32u) * 16u;
  bool aligned = k % 8u == 0u && n % 4u == 0u && row0 + BM <= m && col0 + BN <= n;
  float16 acc[BLOCKS_M][BLOCKS_N];
  for (uint i = 0; i < BLOCKS_M; i++)
    for (uint j = 0; j < BLOCKS_N; j++) acc[i][j] = (float16)(0.0f);
  uint steps = (k + BK - 1u) / BK;
  Staged next = load_step(a, a_len, b, b_len, m, n, k, row0, col0, 0u,
                          aligned && BK <= k);
  for (uint s = 0; s < steps; s++) {
    store_step(as, bs, next);
    BARRIER();
    if (s + 1u < steps) {
      uint k0 = (s + 1u) * BK;
      next = load_step(a, a_len, b, b_len, m, n, k, row0, col0, k0, aligned && k0 + BK <= k);
    }
    half8 fa[BLOCKS_M][2], fb[BLOCKS_N][2];
    for (uint i = 0; i < BLOCKS_M; i++) {
      local const half* pa = as + (wr + 32u * i + li) * LDS_STRIDE + lk;
      fa[i][0] = *(local const half8*)pa;
      fa[i][1] = *(local const half8*)(pa + 8);
    }
    for (uint j = 0; j < BLOCKS_N; j++) {
      local const half* pb = bs + (wc + 32u * j + li) * LDS_STRIDE + lk;
      fb[j][0] = *(local const half8*)pb;
      fb[j][1] = *(local const half8*)(pb + 8);
    }
#ifdef HAS_MFMA
    for (uint q = 0; q < 4u; q++)
      for (uint i = 0; i < BLOCKS_M; i++)
        for (uint j = 0; j < BLOCKS_N; j++) {
          half8 x = fa[i][q / 2u], y = fb[j][q / 2u];
          half4 xa = (q % 2u) ? x.hi : x.lo;
          half4 yb = (q % 2u) ? y.hi : y.lo;
          acc[i][j] = __builtin_amdgcn_mfma_f32_32x32x8f16(xa, yb, acc[i][j], 0, 0, 0);
        }
#else
    // Without matrix cores: the same outputs per lane (see the store below), by FMAs.
#pragma unroll
    for (uint i = 0; i < BLOCKS_M; i++)
#pragma unroll
      for (uint j = 0; j < BLOCKS_N; j++)
        for (uint kk = 0; kk < BK; kk++) {
          float bv = (float)bs[(wc + 32u * j + li) * LDS_STRIDE + kk];
#pragma unroll
          for (uint r = 0; r < 16u; r++) {
            uint ri = wr + 32u * i + 8u * (r / 4u) + 4u * (lane / 32u) + r % 4u;
            acc[i][j][r] = fma((float)as[ri * LDS_STRIDE + kk], bv, acc[i][j][r]);
          }
        }
#endif
    BARRIER();
  }
  // MFMA 32x32 result layout: register r of lane l holds row 8(r/4) + 4(l/32) + r%4, column
  // l%32 of the block.
#pragma unroll
  for (uint i = 0; i < BLOCKS_M; i++)
#pragma unroll
    for (uint j = 0; j < BLOCKS_N; j++)
#pragma unroll
      for (uint r = 0; r < 16u; r++) {
        uint row = row0 + wr + 32u * i + 8u * (r / 4u) + 4u * (lane / 32u) + r % 4u;
        uint col = col0 + wc + 32u * j + li;
        uint ci = row * n + col;
        if (row < m && col < n && ci < c_len) c[ci] = acc[i][j][r];
      }
}
