// End-to-end kernels for the vector ALU, run on kjit's GCN device by tests/valu_kernels.rs.
// One work-item per element; 64-wide workgroups; the grid covers n exactly.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#define GID() (__builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x())

// IEEE f32 division and sqrt over the whole exponent range (div_scale/fmas/fixup macro, scaled sqrt).
kernel void div_sqrt_f32(global const float* a, global const float* b, global float* q, global float* s) {
  uint i = GID();
  q[i] = a[i] / b[i];
  s[i] = sqrt(a[i]);
}

// IEEE f64 division and sqrt (rcp_f64 + Newton-Raphson macro; rsq_f64-based sqrt).
kernel void div_sqrt_f64(global const double* a, global const double* b, global double* q, global double* s) {
  uint i = GID();
  q[i] = a[i] / b[i];
  s[i] = sqrt(a[i]);
}

// 32- and 64-bit integer division and remainder (v_rcp_iflag_f32 based expansion, mul_hi, carries).
kernel void int_div(global const uint* a, global const uint* b, global uint* o, global ulong* o64) {
  uint i = GID();
  uint x = a[i], y = b[i] | 1;
  int sx = (int)a[i], sy = (int)(b[i] | 1);
  o[4 * i + 0] = x / y;
  o[4 * i + 1] = x % y;
  o[4 * i + 2] = (uint)(sx / sy);
  o[4 * i + 3] = (uint)(sx % sy);
  ulong X = ((ulong)a[i] << 32) | b[i], Y = ((ulong)b[i] << 7) | 3;
  o64[2 * i + 0] = X / Y;
  o64[2 * i + 1] = X * Y + (X >> (b[i] & 63));
}

// Float->int conversions (saturating, NaN -> 0), rint/floor/ceil, int->float rounding.
kernel void conversions(global const float* a, global const int* n, global int* oi, global float* of) {
  uint i = GID();
  float x = a[i];
  // Out-of-range float->int is undefined in C, so clang emits the bare v_cvt instruction,
  // whose hardware rule (saturate, NaN -> 0) is what this checks.
  oi[4 * i + 0] = (int)x;
  oi[4 * i + 1] = (int)(uint)x;
  oi[4 * i + 2] = (int)__builtin_rintf(x);
  oi[4 * i + 3] = (int)__builtin_astype((half)x, ushort);
  of[3 * i + 0] = (float)n[i];
  of[3 * i + 1] = (float)(uint)n[i];
  of[3 * i + 2] = __builtin_floorf(x) + __builtin_ceilf(x) * 0.5f;
}

// f16 arithmetic, one rounding per operation (contract off).
kernel void half_ops(global const half* a, global const half* b, global half* o) {
  uint i = GID();
  half x = a[i], y = b[i];
  o[4 * i + 0] = x * y;
  o[4 * i + 1] = x + y;
  o[4 * i + 2] = fmax(x, y);
  o[4 * i + 3] = fma(x, y, x);
}

// Packed f16 (v_pk_* on gfx9).
typedef half half2v __attribute__((ext_vector_type(2)));
kernel void half2_ops(global const half2v* a, global const half2v* b, global half2v* o) {
  uint i = GID();
  half2v x = a[i], y = b[i];
  o[2 * i + 0] = x * y;
  o[2 * i + 1] = x + y;
}

// A full-wave inclusive scan with DPP (row_shr 1,2,4,8 with bound_ctrl, then row_bcast 15/31),
// the shape LLVM's wave reductions take.
kernel void dpp_scan(global const int* a, global int* o) {
  uint i = GID();
  int v = a[i];
  v += __builtin_amdgcn_update_dpp(0, v, 0x111, 0xf, 0xf, true);
  v += __builtin_amdgcn_update_dpp(0, v, 0x112, 0xf, 0xf, true);
  v += __builtin_amdgcn_update_dpp(0, v, 0x114, 0xf, 0xe, true);
  v += __builtin_amdgcn_update_dpp(0, v, 0x118, 0xf, 0xc, true);
  v += __builtin_amdgcn_update_dpp(0, v, 0x142, 0xa, 0xf, false);
  v += __builtin_amdgcn_update_dpp(0, v, 0x143, 0xc, 0xf, false);
  o[i] = v;
}

// Quad permutes, row mirror, lane reads.
kernel void lane_ops(global const int* a, global int* o) {
  uint i = GID();
  int v = a[i];
  o[4 * i + 0] = __builtin_amdgcn_mov_dpp(v, 0x1b, 0xf, 0xf, false);   // quad_perm [3,2,1,0]
  o[4 * i + 1] = __builtin_amdgcn_mov_dpp(v, 0x140, 0xf, 0xf, false);  // row_mirror
  o[4 * i + 2] = __builtin_amdgcn_readlane(v, 37) + __builtin_amdgcn_readfirstlane(v);
  o[4 * i + 3] = __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}
