// Vector-ALU builtins and idioms clang-19 lowers to single instructions: transcendental unit,
// division helpers, class tests, packed and narrow conversions, bit tricks, dot products.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef half half2v __attribute__((ext_vector_type(2)));
typedef short short2v __attribute__((ext_vector_type(2)));

kernel void transcendental(global float* o, global const float* a) {
  int i = __builtin_amdgcn_workitem_id_x();
  float x = a[i];
  o[12*i+0] = __builtin_exp2f(x);
  o[12*i+1] = __builtin_log2f(x);
  o[12*i+2] = __builtin_amdgcn_rcpf(x);
  o[12*i+3] = __builtin_amdgcn_rsqf(x);
  o[12*i+4] = __builtin_amdgcn_sinf(x);
  o[12*i+5] = __builtin_amdgcn_cosf(x);
  o[12*i+6] = __builtin_amdgcn_fractf(x);
  o[12*i+7] = __builtin_amdgcn_frexp_mantf(x) + __builtin_amdgcn_frexp_expf(x);
  o[12*i+8] = __builtin_amdgcn_classf(x, 0x3) ? 1.0f : __builtin_amdgcn_ldexpf(x, i);
  o[12*i+9] = __builtin_amdgcn_fmed3f(x, 0.0f, 1.0f);
  o[12*i+10] = __builtin_sqrtf(x) + __builtin_amdgcn_sqrtf(x);
  o[12*i+11] = __builtin_amdgcn_div_fixupf(x, a[i+1], a[i+2]);
}

kernel void doubles(global double* o, global const double* a) {
  int i = __builtin_amdgcn_workitem_id_x();
  double x = a[i];
  o[6*i+0] = __builtin_amdgcn_rcp(x);
  o[6*i+1] = __builtin_amdgcn_rsq(x);
  o[6*i+2] = __builtin_amdgcn_trig_preop(x, i & 3);
  o[6*i+3] = __builtin_amdgcn_fract(x) + __builtin_amdgcn_frexp_mant(x);
  o[6*i+4] = (double)__builtin_amdgcn_frexp_exp(x) + __builtin_amdgcn_ldexp(x, 3);
  o[6*i+5] = __builtin_amdgcn_class(x, 0x60) ? x : -x;
}

kernel void halves(global half* o, global half2v* o2, global const half* a, global const half2v* b) {
  int i = __builtin_amdgcn_workitem_id_x();
  half x = a[i];
  o[6*i+0] = __builtin_amdgcn_rcph(x);
  o[6*i+1] = __builtin_amdgcn_rsqh(x);
  o[6*i+2] = __builtin_amdgcn_sinh(x) + __builtin_amdgcn_cosh(x);
  o[6*i+3] = __builtin_amdgcn_fracth(x) + __builtin_amdgcn_ldexph(x, 2);
  o[6*i+4] = x < (half)0 ? x * x : -x;
  o[6*i+5] = (half)(short)x + (half)(ushort)a[i+1];
  half2v v = b[i], w = b[i+1];
  o2[3*i+0] = v * w + v;
  o2[3*i+1] = __builtin_elementwise_max(v, w) - __builtin_elementwise_min(v, w);
  o2[3*i+2] = __builtin_amdgcn_cvt_pkrtz((float)x, (float)a[i+2]);
}

kernel void narrow(global uint* o, global const float* a, global const uint* b) {
  int i = __builtin_amdgcn_workitem_id_x();
  float x = a[i];
  uint y = b[i];
  o[12*i+0] = (uint)(uchar)y + (float)(uchar)(y >> 8) + (float)(uchar)(y >> 24);
  o[12*i+1] = __builtin_astype(__builtin_amdgcn_cvt_pknorm_i16(x, a[i+1]), uint);
  o[12*i+2] = __builtin_astype(__builtin_amdgcn_cvt_pknorm_u16(x, a[i+1]), uint);
  o[12*i+3] = __builtin_astype(__builtin_amdgcn_cvt_pk_u16(y, b[i+1]), uint);
  o[12*i+4] = __builtin_astype(__builtin_amdgcn_cvt_pk_i16(y, b[i+1]), uint);
  o[12*i+5] = __builtin_amdgcn_perm(y, b[i+1], 0x05040100);
  o[12*i+6] = __builtin_amdgcn_alignbit(y, b[i+1], i) ^ __builtin_amdgcn_alignbyte(y, b[i+1], i);
  o[12*i+7] = __builtin_amdgcn_sad_u8(y, b[i+1], 3u) + __builtin_amdgcn_msad_u8(y, b[i+1], 5u);
  o[12*i+8] = __builtin_amdgcn_lerp(y, b[i+1], 1u) + __builtin_amdgcn_sad_hi_u8(y, b[i+2], 0u);
  o[12*i+9] = __builtin_amdgcn_ubfe(y, 3, 9) + __builtin_amdgcn_sbfe((int)y, 5, 7);
  o[12*i+10] = bitselect(y, b[i+1], b[i+2]) + __builtin_amdgcn_cvt_pk_u8_f32(x, 1, y);
  o[12*i+11] = __builtin_amdgcn_sad_u16(y, b[i+1], 1u);
}
