// Shared helpers for the emulator corpus: work-item ids from builtins (no device libraries).
#define LID_X() __builtin_amdgcn_workitem_id_x()
#define LID_Y() __builtin_amdgcn_workitem_id_y()
#define GID_X() (__builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + LID_X())
#define GID_Y() (__builtin_amdgcn_workgroup_id_y() * __builtin_amdgcn_workgroup_size_y() + LID_Y())
#define BARRIER()                                              \
  do {                                                         \
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");     \
    __builtin_amdgcn_s_barrier();                              \
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");     \
  } while (0)
