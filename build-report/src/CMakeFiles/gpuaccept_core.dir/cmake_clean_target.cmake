file(REMOVE_RECURSE
  "libgpuaccept_core.a"
)
