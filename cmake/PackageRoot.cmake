# gpuaccept_package_root(<out> <VAR>): the prefix an operator named for a dependency, as the
# CMake variable <VAR> (-D<VAR>=...) or else the environment variable of that name; "" when
# neither is set. Used by the Find modules (FindSlurm, FindPMIx, FindNCCL): a named prefix is
# the only place they search, so a distribution's library elsewhere is never picked up.
function(gpuaccept_package_root out var)
  set(_root "${${var}}")
  if(NOT _root AND DEFINED ENV{${var}})
    set(_root "$ENV{${var}}")
  endif()
  set(${out} "${_root}" PARENT_SCOPE)
endfunction()
