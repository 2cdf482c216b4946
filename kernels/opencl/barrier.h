// A workgroup barrier with the memory ordering OpenCL's barrier(CLK_LOCAL_MEM_FENCE) gives:
// LDS writes before it are visible to every work-item of the group after it. Shared by the
// twins that use LDS (included by path, relative to the including file).
#ifndef KJIT_TWIN_BARRIER_H
#define KJIT_TWIN_BARRIER_H
#define BARRIER()                                              \
  do {                                                         \
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");     \
    __builtin_amdgcn_s_barrier();                              \
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");     \
  } while (0)
#endif
