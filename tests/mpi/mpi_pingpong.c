/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two MPI ranks (Open MPI's UCX layer over the verbs devices, built with
 * mpicc by tests/integration/verbs_api.sh): 1 MiB messages there and back,
 * each changed by the other rank and compared byte for byte, for every
 * size from 1 byte to 1 MiB in powers of two; then an allreduce. Prints
 * "mpi_pingpong: PASS" from rank 0 and exits 0 when everything matched.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_LEN (1 << 20)
#define ROUNDS 4

static unsigned char pattern(int i, int len, int round)
{
	return (unsigned char)(i * 7 + len + round);
}

int main(int argc, char **argv)
{
	unsigned char *buf;
	int rank, size, bad = 0;
	long mine, sum = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	buf = malloc(MAX_LEN);
	if (!buf || size != 2)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (int len = 1; len <= MAX_LEN; len *= 2) {
		for (int r = 0; r < ROUNDS; r++) {
			int tag = len % 32768 + r;

			if (rank == 0) {
				for (int i = 0; i < len; i++)
					buf[i] = pattern(i, len, r);
				MPI_Send(buf, len, MPI_BYTE, 1, tag, MPI_COMM_WORLD);
				MPI_Recv(buf, len, MPI_BYTE, 1, tag, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				for (int i = 0; i < len; i++)
					if (buf[i] != (unsigned char)(pattern(i, len, r) + 1)) {
						printf("mpi_pingpong: %d bytes, round %d: byte %d differs\n",
						       len, r, i);
						bad++;
						break;
					}
			} else {
				MPI_Recv(buf, len, MPI_BYTE, 0, tag, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				for (int i = 0; i < len; i++)
					buf[i]++;
				MPI_Send(buf, len, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
			}
		}
	}
	mine = rank + 1;
	MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (sum != 3)
		bad++;
	if (rank == 0)
		printf("mpi_pingpong: %s (allreduce %ld)\n", bad ? "FAIL" : "PASS", sum);
	free(buf);
	MPI_Finalize();
	return bad ? 1 : 0;
}
