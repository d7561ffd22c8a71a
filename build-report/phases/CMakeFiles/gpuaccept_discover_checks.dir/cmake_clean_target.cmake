file(REMOVE_RECURSE
  "libgpuaccept_discover_checks.a"
)
