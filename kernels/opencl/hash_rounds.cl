// OpenCL twin of kjit's `hash_rounds` (kernels/src/hash.rs): every work-item keeps 40 u32 words
// of state through `rounds` rounds; each round looks up one table entry per word, addressed from
// the previous round's state, then rotates, adds and mixes. out[i] = xor of state[j] * (2j + 1).
//
// Same argument ABI as the kjit kernel: every buffer is a pointer followed by its length in
// elements (uint); scalars by value. Out-of-range loads give 0 (kjit's raw-buffer rule).
#define GID_X() (__builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x())
#define STATE 40

__attribute__((amdgpu_flat_work_group_size(1, 1024)))
kernel void hash_rounds(global const uint* seeds, uint seeds_len,
                        global const uint* table, uint table_len,
                        global uint* out, uint out_len,
                        uint rounds) {
  uint i = GID_X();
  if (i >= out_len) return;
  uint seed = i < seeds_len ? seeds[i] : 0u;
  uint s[STATE], old[STATE];
  for (int j = 0; j < STATE; j++) s[j] = seed * (0x9e3779b1u + 2u * j) ^ (uint)j;
  for (uint r = 0; r < rounds; r++) {
    for (int j = 0; j < STATE; j++) old[j] = s[j];
    for (int j = 0; j < STATE; j++) {
      uint ix = (old[j] ^ (old[(j + 1) % STATE] >> 3)) & 255u;
      uint t = ix < table_len ? table[ix] : 0u;
      uint x = old[j] + t;
      uint rot = 3u + (uint)(j % 13);
      s[j] = ((x << rot) | (x >> (32u - rot))) ^ old[(j + STATE / 2) % STATE];
    }
  }
  uint h = 0;
  for (int j = 0; j < STATE; j++) h ^= s[j] * (2u * j + 1u);
  out[i] = h;
}
