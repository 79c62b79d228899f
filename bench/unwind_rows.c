// SPDX-License-Identifier: MIT
/*
 * The bench's unwind table sizes: for each ELF file named, the rows of the
 * table pybpfprof builds for it (target/unwind_table.c) and what they take in
 * the BPF rows map; then the sum. "rows KiB path" a line, "- - path: reason"
 * for a file without a table.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "target/unwind_table.h"
#include "unwind_table.h"
#include "util/errbuf.h"

int main(int argc, char **argv)
{
	size_t total_rows = 0, files = 0;

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
