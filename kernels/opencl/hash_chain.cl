// OpenCL twin of kjit's `hash_chain` (kernels/src/hash.rs): every work-item keeps 56 u32 words
// of state through `rounds` rounds; each step's table index depends on the previous step's
// lookup (t = table[(t ^ s[j]) & 63]), then the word adds the lookup and rotates.
// out[i] = t ^ xor of state[j] * (2j + 1).
//
// Same argument ABI as the kjit kernel: every buffer is a pointer followed by its length in
// elements (uint); scalars by value. Out-of-range loads give 0 (kjit's raw-buffer rule).
#define GID_X() (__builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x())
#define STATE 56

__attribute__((amdgpu_flat_work_group_size(1, 1024)))
kernel void hash_chain(global const uint* seeds, uint seeds_len,
                       global const uint* table, uint table_len,
                       global uint* out, uint out_len,
                       uint rounds) {
  uint i = GID_X();
  if (i >= out_len) return;
  uint seed = i < seeds_len ? seeds[i] : 0u;
  uint s[STATE];
  for (int j = 0; j < STATE; j++) s[j] = seed * (0x9e3779b1u + 2u * j) ^ (uint)j;
  uint t = seed;
  for (uint r = 0; r < rounds; r++) {
    for (int j = 0; j < STATE; j++) {
      uint ix = (t ^ s[j]) & 63u;
      uint v = ix < table_len ? table[ix] : 0u;
      uint x = s[j] + v;
      uint rot = 1u + (uint)(j % 31);
      s[j] = (x << rot) | (x >> (32u - rot));
      t = v;
    }
  }
  uint h = t;
  for (int j = 0; j < STATE; j++) h ^= s[j] * (2u * j + 1u);
  out[i] = h;
}
