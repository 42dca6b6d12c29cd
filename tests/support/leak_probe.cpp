// The sanitize build's leak check, checked itself (tests/CMakeLists.txt). With
// the suite's ASAN_OPTIONS and lsan_mpi.supp, LeakSanitizer must stay silent
// on an MPI program that leaks nothing of its own, singleton or launched, and
// must still fail one that loses an allocation of its own or the strings an
// HDF5 variable-length read handed it. The suppressions name libraries and
// functions (the MPI libraries, a glibc formatter) and the unwinder stops at
// frames without frame pointers, so either could hide more than it means to:
// this is the check that it does not.
//
//   leak_probe none | own | hdf5_strings | hdf5_strings_reclaimed  SCRATCH_DIR
#include <hdf5.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

// Writes three variable-length strings and reads them back, as kotml's
// read_string_values does, reclaiming them or not.
int read_strings(const std::string& path, bool reclaim) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  const hsize_t count = 3;
  const hid_t space = H5Screate_simple(1, &count, nullptr);
  const hid_t set = H5Dcreate2(file, "strings", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const char* written[3] = {"alpha", "beta", "gamma"};
  std::vector<char*> read(3, nullptr);
  const bool ok = file >= 0 && set >= 0 && H5Dwrite(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, written) >= 0 &&
                  H5Dread(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, read.data()) >= 0 &&
                  std::strcmp(read[1], "beta") == 0;
  if (reclaim) H5Dvlen_reclaim(type, space, H5P_DEFAULT, read.data());
  H5Dclose(set);
  H5Sclose(space);
  H5Tclose(type);
  H5Fclose(file);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int status = 0;
  const std::string mode = argc > 2 ? argv[1] : "";
  const std::string path = argc > 2 ? std::string(argv[2]) + "/leak_probe_" + std::to_string(rank) + ".h5" : "";
  if (mode == "own") {
    volatile int* lost = new int[64];
    lost[0] = rank;
    lost = nullptr;
  } else if (mode == "hdf5_strings" || mode == "hdf5_strings_reclaimed") {
    status = read_strings(path, mode == "hdf5_strings_reclaimed");
  } else if (mode != "none") {
    std::fprintf(stderr, "usage: leak_probe none|own|hdf5_strings|hdf5_strings_reclaimed SCRATCH_DIR\n");
    status = 2;
  }
  MPI_Finalize();
  return status;
}
