// Writes a results file as the reader child's answer (result_file_wire.h): how
// seeds/wire was made from the report fixture's files (make_seeds.sh).
//   make_wire_seed IN.h5 OUT
#include <cstdio>
#include <fstream>

#include "results/result_file.h"
#include "results/result_file_wire.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_wire_seed IN.h5 OUT\n");
    return 2;
  }
  const std::string wire = gpuaccept::encode_result_file(gpuaccept::read_result_file(argv[1]));
  std::ofstream(argv[2], std::ios::binary) << wire;
  return 0;
}
