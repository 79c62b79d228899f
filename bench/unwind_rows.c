// SPDX-License-Identifier: MIT
/*
 * The bench's unwind table sizes: for each ELF file named, the rows of the
 * table pybpfprof builds for it (unwind/file_table.c) and what they take in
 * the BPF rows map; then the sum. "rows KiB path" a line, "- - path: reason"
 * for a file without a table.
 *
 * With --build-time first: the CPU time building each file's table takes, in
 * one pass and by libdw row by row (unwind_table_build_per_row), the best of
 * BUILD_RUNS each, and their ratio: "one-pass-ms per-row-ms ratio path".
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "worker/unwind_build.h"
#include "unwind_table.h"
#include "util/errbuf.h"

#define BUILD_RUNS 5

typedef int (*table_builder)(int fd, struct unwind_table *table, struct errbuf *error);

static double cpu_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
	return (double)now.tv_sec * 1000.0 + (double)now.tv_nsec / 1e6;
}

/* The least CPU time of BUILD_RUNS builds, or a negative number if the build fails. */
static double best_build_ms(int fd, table_builder build)
{
	double best = -1;

	for (int run = 0; run < BUILD_RUNS; run++) {
		struct unwind_table table;
		struct errbuf error;
		double started = cpu_ms(), spent;
		int err = build(fd, &table, &error);

		spent = cpu_ms() - started;
		unwind_table_free(&table);
		if (err)
			return -1;
		if (best < 0 || spent < best)
			best = spent;
	}
	return best;
}

static int print_build_times(int count, char **paths)
{
	printf("%9s %9s %7s (CPU ms, best of %d)\n", "one-pass", "per-row", "ratio", BUILD_RUNS);
	for (int i = 0; i < count; i++) {
		int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
		double one_pass = fd < 0 ? -1 : best_build_ms(fd, unwind_table_build);
		double per_row = fd < 0 ? -1 : best_build_ms(fd, unwind_table_build_per_row);

		if (fd >= 0)
			close(fd);
		if (one_pass < 0 || per_row < 0)
			printf("%9s %9s %7s %s: no table\n", "-", "-", "-", paths[i]);
		else
			printf("%9.1f %9.1f %6.1fx %s\n", one_pass, per_row, per_row / (one_pass > 0 ? one_pass : 1e-3),
			       paths[i]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	size_t total_rows = 0, files = 0;

	if (argc > 1 && !strcmp(argv[1], "--build-time"))
		return print_build_times(argc - 2, argv + 2);

	for (int i = 1; i < argc; i++) {
		struct unwind_table table = { 0 };
		struct errbuf error = { 0 };
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
		int err = fd < 0 ? -1 : unwind_table_build(fd, &table, &error);

		if (fd >= 0)
			close(fd);
		if (err) {
			printf("%8s %9s %s: %s\n", "-", "-", argv[i], fd < 0 ? "cannot open" : error.text);
			continue;
		}
		printf("%8zu %9.1f %s\n", table.count, (double)(table.count * sizeof(struct unwind_row)) / 1024.0,
		       argv[i]);
		total_rows += table.count;
		files++;
		unwind_table_free(&table);
	}
	printf("%8zu %9.1f total of %zu files\n", total_rows,
	       (double)(total_rows * sizeof(struct unwind_row)) / 1024.0, files);
	return 0;
}
