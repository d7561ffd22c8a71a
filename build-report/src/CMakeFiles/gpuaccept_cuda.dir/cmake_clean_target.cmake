file(REMOVE_RECURSE
  "libgpuaccept_cuda.a"
)
