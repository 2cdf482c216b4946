// One MFMA tile (gfx90a/gfx942): D(32x32, f32) = A(32x8, f16) * B(8x32, f16) with
// v_mfma_f32_32x32x8f16. One wave. Lane l holds A[l%32][4*(l/32)+j] and B[4*(l/32)+j][l%32] for
// j = 0..3; accumulator r of lane l is D[8*(r/4) + 4*(l/32) + r%4][l%32] (CDNA3 ISA, MFMA
// operand layouts).
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#include "common.h"

typedef half half4 __attribute__((ext_vector_type(4)));
typedef float float16 __attribute__((ext_vector_type(16)));

kernel void mfma_tile(global const half* a, global const half* b, global float* d) {
  uint l = LID_X();
  uint row = l % 32, kb = 4 * (l / 32);
  half4 av, bv;
  for (int j = 0; j < 4; j++) {
    av[j] = a[row * 8 + kb + j];
    bv[j] = b[(kb + j) * 32 + row];
  }
  float16 acc = 0;
  acc = __builtin_amdgcn_mfma_f32_32x32x8f16(av, bv, acc, 0, 0, 0);
  for (int r = 0; r < 16; r++) {
    uint i = 8 * (r / 4) + 4 * (l / 32) + r % 4;
    d[i * 32 + row] = acc[r];
  }
}
