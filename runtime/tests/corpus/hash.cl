// Integer-heavy hash with many live registers: a 16-word state mixed over several rounds.
#include "common.h"

#define ROTL(x, r) (((x) << (r)) | ((x) >> (32 - (r))))
#define QR(a, b, c, d)          \
  a += b; d ^= a; d = ROTL(d, 16); \
  c += d; b ^= c; b = ROTL(b, 12); \
  a += b; d ^= a; d = ROTL(d, 8);  \
  c += d; b ^= c; b = ROTL(b, 7);

kernel void mix(global const uint* key, global uint* out, uint rounds) {
  uint i = GID_X();
  uint s0 = 0x61707865, s1 = 0x3320646e, s2 = 0x79622d32, s3 = 0x6b206574;
  uint s4 = key[0] ^ i, s5 = key[1], s6 = key[2], s7 = key[3];
  uint s8 = key[4], s9 = key[5], s10 = key[6], s11 = key[7];
  uint s12 = i, s13 = i * 0x9e3779b9u, s14 = ~i, s15 = i ^ 0xdeadbeef;
  for (uint r = 0; r < rounds; r++) {
    QR(s0, s4, s8, s12) QR(s1, s5, s9, s13) QR(s2, s6, s10, s14) QR(s3, s7, s11, s15)
    QR(s0, s5, s10, s15) QR(s1, s6, s11, s12) QR(s2, s7, s8, s13) QR(s3, s4, s9, s14)
  }
  uint* o = out + i * 4;
  o[0] = s0 ^ s4 ^ s8 ^ s12 ^ (s1 * 3);
  o[1] = s1 ^ s5 ^ s9 ^ s13 ^ (s2 * 5);
  o[2] = s2 ^ s6 ^ s10 ^ s14 ^ (s3 * 7);
  o[3] = s3 ^ s7 ^ s11 ^ s15 ^ (s0 * 11);
}
