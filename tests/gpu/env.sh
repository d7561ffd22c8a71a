# shellcheck shell=bash
# Sourced THERE (the GPU machine) by tests/gpu/run: unpacks the carried Debian
# packages into a prefix of our own (never into /) and points the loader at it.
# GPA_CARRY: what tests/gpu/prepare packed (.gpu-carry; STACK=debian13: .gpu-carry-debian13,
# with GPA_PREFIX=/opt/gpuaccept-debian13 so the two stacks never mix).
GPA_CARRY=${GPA_CARRY:-.gpu-carry}
GPA_PREFIX=${GPA_PREFIX:-/opt/gpuaccept-prefix}
# Unpacked once, under a lock: two scripts started at once (one per GPU) must not load from a
# half-unpacked prefix (their first runs died with exit 127, a library not found).
mkdir -p "$GPA_PREFIX"
exec {gpa_lock}>"$GPA_PREFIX.lock"
flock "$gpa_lock"
# Binaries packed as one archive (STACK=debian13 prepare): unpacked beside it.
if [ -f "$GPA_CARRY/bin.tar.xz" ] && [ ! -d "$GPA_CARRY/bin" ]; then tar -C "$GPA_CARRY" -xJf "$GPA_CARRY/bin.tar.xz"; fi
if [ ! -d "$GPA_PREFIX/usr" ]; then
  for d in "$GPA_CARRY"/debs/*.deb; do dpkg -x "$d" "$GPA_PREFIX"; done
fi
# Only libraries this machine lacks go on the loader path: the system's own (newer)
# libssl, zlib, ... stay in use for everything else, PyTorch included.
extra=$GPA_PREFIX/lib-extra
if [ ! -d "$extra" ]; then
  mkdir -p "$extra"
  known=$(ldconfig -p | awk '{print $1}' | sort -u)
  find "$GPA_PREFIX/usr/lib/x86_64-linux-gnu" "$GPA_PREFIX/lib/x86_64-linux-gnu" -maxdepth 3 -name 'lib*.so*' \( -type f -o -type l \) | while read -r f; do
    name=$(basename "$f")
    # PMIx must be the version Slurm's mpi/pmix plugin was built with, even where the
    # machine has another (an MPI's).
    case $name in libpmix*) ln -sf "$f" "$extra/$name"; continue ;; esac
    grep -qxF "$name" <<<"$known" || ln -sf "$f" "$extra/$name"
  done
fi
flock -u "$gpa_lock"
lib=$GPA_PREFIX/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$extra:$lib/slurm-wlm${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$GPA_PREFIX/usr/bin:$GPA_PREFIX/usr/sbin:$GPA_PREFIX/bin:$GPA_PREFIX/sbin:$PATH
export GPUACCEPT_SLURM_PREFIX=$GPA_PREFIX
# The carried libpmix looks for its plugins where Debian installs them
# (/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix), and there the GPU machine has Ubuntu's PMIx 5,
# whose zlib compression plugin does not load into our PMIx 4: every rank printed "dlopen
# error: ... pmix_mca_pcompress_zlib.so: undefined symbol: pmix_output_info" into the job
# log. Neither PMIX_MCA_mca_base_component_path nor PMIX_INSTALL_PREFIX moves the search
# (tried with a broken plugin planted on the build machine: the message stays), so the
# component is left out by name; PMIx then sends its (small) blobs uncompressed.
export PMIX_MCA_pcompress=^zlib
export GPUACCEPT_BIN=$PWD/$GPA_CARRY/bin
# nccl-tests, when tests/gpu/prepare packed them (NCCL_TESTS_BUILD): for nccl_compare.sh.
if [ -f .gpu-carry/nccl-tests.tar.xz ]; then
  [ -d .gpu-carry/nccl-tests ] || tar -C .gpu-carry -xJf .gpu-carry/nccl-tests.tar.xz
  export NCCL_TESTS_BIN=$PWD/.gpu-carry/nccl-tests
fi
# NVLink multicast off everywhere on the lent machines (it can take the host's GPUs down).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
