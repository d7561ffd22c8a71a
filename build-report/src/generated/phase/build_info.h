#pragma once
#define GPUACCEPT_VERSION "0.1.0"
#define GPUACCEPT_GIT_COMMIT "41c585968df6-dirty"
