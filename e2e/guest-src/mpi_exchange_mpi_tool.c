// mpi_exchange: the two-node e2e's MPI job (built with Debian 12's mpicc, Open MPI 4.1). Run as
// two ranks, one in a pod on each node: an MPI_Allreduce whose sum every rank checks, then a
// point-to-point exchange of a patterned 256 KiB buffer (rank 0 sends, rank 1 checks and sends it back
// changed, rank 0 checks), timed over ITERS round trips. Prints one line per check and
// "MPI-EXCHANGE OK allreduce=<sum> pingpong_usec=<avg round trip / 2> bw_mbs=<MB/s>" from rank 0
// when every check passed; exits non-zero on any mismatch.
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kIters = 20, kBytes = 1 << 18 };

static int Check(int ok, int rank, const char* what) {
  if (!ok) fprintf(stderr, "MPI-EXCHANGE rank %d: %s: MISMATCH\n", rank, what);
  return ok;
}

int main(int argc, char** argv) {
  int rank = 0, size = 0, ok = 1;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char host[MPI_MAX_PROCESSOR_NAME];
  int host_len = 0;
  MPI_Get_processor_name(host, &host_len);
  printf("MPI-EXCHANGE rank %d of %d on %s\n", rank, size, host);
  if (size != 2) {
    fprintf(stderr, "MPI-EXCHANGE: needs exactly 2 ranks, got %d\n", size);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  // Allreduce: each rank contributes (rank + 1) * 1000 + i in element i.
  long in[16], out[16];
  for (int i = 0; i < 16; i++) in[i] = (long)(rank + 1) * 1000 + i;
  MPI_Allreduce(in, out, 16, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < 16; i++) ok &= Check(out[i] == 3000 + 2L * i, rank, "allreduce sum");

  // Point to point: a 256 KiB patterned buffer, round trips; rank 1 adds 1 to every byte.
  unsigned char* buf = malloc(kBytes);
  if (buf == NULL) MPI_Abort(MPI_COMM_WORLD, 3);
  double t0 = MPI_Wtime();
  for (int it = 0; it < kIters; it++) {
    if (rank == 0) {
      for (int i = 0; i < kBytes; i++) buf[i] = (unsigned char)(i * 7 + it);
      MPI_Send(buf, kBytes, MPI_BYTE, 1, it, MPI_COMM_WORLD);
      MPI_Recv(buf, kBytes, MPI_BYTE, 1, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      int good = 1;
      for (int i = 0; i < kBytes; i++) good &= buf[i] == (unsigned char)(i * 7 + it + 1);
      ok &= Check(good, rank, "point-to-point reply");
    } else {
      MPI_Recv(buf, kBytes, MPI_BYTE, 0, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      int good = 1;
      for (int i = 0; i < kBytes; i++) good &= buf[i] == (unsigned char)(i * 7 + it);
      ok &= Check(good, rank, "point-to-point message");
      for (int i = 0; i < kBytes; i++) buf[i] = (unsigned char)(buf[i] + 1);
      MPI_Send(buf, kBytes, MPI_BYTE, 0, it, MPI_COMM_WORLD);
    }
  }
  double secs = MPI_Wtime() - t0;
  free(buf);

  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (rank == 0 && all_ok) {
    printf("MPI-EXCHANGE OK allreduce=%ld pingpong_usec=%.1f bw_mbs=%.2f\n", out[15],
           secs / kIters / 2 * 1e6, 2.0 * kIters * kBytes / secs / 1e6);
  }
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
