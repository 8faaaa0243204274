/* Pingpong between ranks 0 and 1: one-way time per message size, in microseconds. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    static const int sizes[] = {8, 65536, 4194304};
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *buf = calloc(4194304, 1);
    for (int s = 0; s < 3; s++) {
        int n = sizes[s], reps = n >= 1048576 ? 40 : (n >= 65536 ? 400 : 4000);
        for (int warm = 0; warm < 2; warm++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t = MPI_Wtime();
            for (int i = 0; i < reps; i++) {
                if (rank == 0) {
                    MPI_Send(buf, n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                    MPI_Recv(buf, n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (rank == 1) {
                    MPI_Recv(buf, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
                }
            }
            t = MPI_Wtime() - t;
            if (rank == 0 && warm == 1) printf("%d %.3f\n", n, t / reps / 2 * 1e6);
        }
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
