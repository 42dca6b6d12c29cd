// Preloaded into the sanitize build's tests (LD_PRELOAD): dlclose does nothing,
// so every shared object a process opened stays mapped until it exits.
//
// Why: Open MPI unloads its components (mca_*.so) in MPI_Finalize, before
// LeakSanitizer reports at exit. Allocations those components kept would then
// show frames of "<unknown module>", which no suppression can name; with the
// modules still mapped, tests/support/lsan_mpi.supp names the MPI libraries and
// any leak with none of their frames still fails the test. Built without
// sanitizers: it is also loaded into uninstrumented programs (mpiexec, Python).

extern "C" int dlclose(void* /*handle*/) { return 0; }
