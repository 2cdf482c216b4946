// Shared helpers of kjit's instruction-layer corpus (compiled with -nogpulib: no device
// libraries, so work-item ids come from the amdgcn builtins).
#define GID() ((int)(__builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x()))
#define LID() ((int)__builtin_amdgcn_workitem_id_x())
#define BARRIER()                                              \
  do {                                                         \
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");     \
    __builtin_amdgcn_s_barrier();                              \
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");     \
  } while (0)
