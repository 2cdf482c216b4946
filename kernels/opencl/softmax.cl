// OpenCL twin of kjit's `softmax` (kernels/src/softmax.rs): one wave of 64 per row,
// out[r, j] = exp2((x[r, j] - max_r) * log2(e)) * rcp(sum_j exp2((x[r, j] - max_r) * log2(e))),
// with the row maximum and the sum reduced across the wave (butterfly of ds_bpermute).
// The kjit kernel allows contraction to fma; so does this one (OpenCL's default).
//
// Same argument ABI as the kjit kernel: every buffer is a pointer followed by its length in
// elements (uint); scalars by value. Out-of-range loads give 0, out-of-range stores are dropped.
#define BLOCK 64u
#define LOG2E 1.44269504088896340736f

static uint lane_id(void) {
  return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}

static float shuffle_xor(float v, uint mask) {
  int r = __builtin_amdgcn_ds_bpermute((int)((lane_id() ^ mask) << 2), __builtin_bit_cast(int, v));
  return __builtin_bit_cast(float, r);
}

static float wave_max(float v) {
  for (uint m = 32; m > 0; m >>= 1) v = __builtin_fmaxf(v, shuffle_xor(v, m));
  return v;
}

static float wave_sum(float v) {
  for (uint m = 32; m > 0; m >>= 1) v = v + shuffle_xor(v, m);
  return v;
}

__attribute__((amdgpu_flat_work_group_size(1, 1024)))
kernel void softmax(global const float* x, uint x_len,
                    global float* out, uint out_len,
                    uint cols) {
  uint row = __builtin_amdgcn_workgroup_id_x();
  uint lid = __builtin_amdgcn_workitem_id_x();
  uint base = row * cols;
  float m = -__builtin_inff();
  for (uint j = lid; j < cols; j += BLOCK) {
    uint k = base + j;
    m = __builtin_fmaxf(m, k < x_len ? x[k] : 0.0f);
  }
  m = wave_max(m);
  float s = 0.0f;
  for (uint j = lid; j < cols; j += BLOCK) {
    uint k = base + j;
    s = s + __builtin_exp2f(((k < x_len ? x[k] : 0.0f) - m) * LOG2E);
  }
  float inv = __builtin_amdgcn_rcpf(wave_sum(s));
  for (uint j = lid; j < cols; j += BLOCK) {
    uint k = base + j;
    float e = __builtin_exp2f(((k < x_len ? x[k] : 0.0f) - m) * LOG2E);
    if (k < out_len) out[k] = e * inv;
  }
}
