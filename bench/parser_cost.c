// SPDX-License-Identifier: MIT
/*
 * What reading a file's symbols in the parser worker costs against reading them in process
 * (doc/security.md): for each file given, the median of ROUNDS reads of its symbols (the
 * file's own table, as the symbolizer asks first) each way, as latency (wall time) and CPU
 * (root's plus the worker's), and the worker's start (spawn, sandbox, first answer); then the
 * same for discovery's verdict on the file (is it a CPython runtime, which version), and for
 * its unwind table (built in process as the profiler once did, against root's whole way now:
 * its own code ranges read, the worker's build, the transfer, every row checked, the index).
 * With --host, the files are taken as a host's (the executable files its Pythons map): what
 * discovery and the table builder do for each of them, the whole set each way in a round
 * (discovery's verdicts one request a file, and batched as discovery asks them), as totals.
 * Usage: parser_cost [--host] PYBPFPROF_BINARY FILE...
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "parser/parser_client.h"
#include "parser/parser_protocol.h"
#include "elf/elf_file.h"
#include "elf/elf_symbols.h"
#include "proc/proc_identity.h"
#include "python/py_runtime_file.h"
#include "unwind/file_table.h"
#include "util/clock.h"
#include "worker/unwind_build.h"

#define ROUNDS 21

static uint64_t own_cpu_us(void)
{
	struct timespec now;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
	return (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
}

/* A process's time on a CPU from /proc/PID/schedstat (nanoseconds there), in microseconds. */
static uint64_t process_cpu_us(pid_t pid)
{
	char text[128];
	unsigned long long on_cpu_ns = 0;

	if (proc_identity_read_file(pid, "schedstat", text, sizeof(text)) <= 0 ||
	    sscanf(text, "%llu", &on_cpu_ns) != 1)
		return 0;
	return on_cpu_ns / 1000u;
}

static int compare_u64(const void *left, const void *right)
{
	uint64_t a = *(const uint64_t *)left, b = *(const uint64_t *)right;

	return a < b ? -1 : a > b;
}

static uint64_t median(uint64_t *values, size_t count)
{
	qsort(values, count, sizeof(*values), compare_u64);
	return values[count / 2];
}

/* The old way: libelf in this process, the file's own functions. */
static void in_process(const char *path, uint64_t *wall_us, uint64_t *cpu_us, size_t *functions)
{
	uint64_t start = clock_monotonic_us(), cpu = own_cpu_us();
	struct elf_symbols symbols;
	struct elf_file file;

	*functions = 0;
	if (!elf_file_open(&file, path)) {
		if (!elf_symbols_read(&symbols, &file, NULL, NULL))
			*functions = symbols.count;
		elf_symbols_free(&symbols);
		elf_file_close(&file);
	}
	*wall_us = clock_monotonic_us() - start;
	*cpu_us = own_cpu_us() - cpu;
}

/* The worker's way: root opens, the worker reads, root checks and copies the answer out. */
static int in_worker(struct parser_client *client, const char *path, uint64_t *wall_us, uint64_t *cpu_us,
		     size_t *functions)
{
	pid_t worker = parser_client_worker_pid(client);
	/* the worker's CPU read first: reading /proc is the bench's cost, not the worker's */
	uint64_t worker_cpu = process_cpu_us(worker), start = clock_monotonic_us(), cpu = own_cpu_us();
	struct parser_symbols symbols;
	struct elf_symbols_source source = { 0 };
	struct elf_symbols merged;
	void *payload;
	size_t len;
	int fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	int err;

	if (fd < 0)
		return -1;
	err = parser_client_request(client, PARSER_REQUEST_FILE_SYMBOLS, fd, 0, 32u << 20, &payload, &len);
	close(fd);
	if (err || parser_symbols_check(payload, len, &symbols))
		return -1;
	/* what the loader does with an answer: names copied, functions pointed at them */
	source.count = symbols.head->function_count;
	source.names = malloc(symbols.head->names_len + 1);
	source.functions = calloc(source.count + 1, sizeof(*source.functions));
	memcpy(source.names, symbols.names, symbols.head->names_len);
	for (size_t i = 0; i < source.count; i++)
		source.functions[i] = (struct elf_function){ symbols.functions[i].addr, symbols.functions[i].size,
							     source.names + symbols.functions[i].name_offset };
	free(payload);
	elf_symbols_merge(&merged, &source, 1);
	*functions = merged.count;
	elf_symbols_free(&merged);
	*wall_us = clock_monotonic_us() - start;
	*cpu_us = own_cpu_us() - cpu;
	*cpu_us += process_cpu_us(worker) - worker_cpu;
	return 0;
}

/* Discovery's verdict in this process: libelf here, as before the worker. */
static void verdict_in_process(const char *path, uint64_t *wall_us, uint64_t *cpu_us, int *verdict)
{
	uint64_t start = clock_monotonic_us(), cpu = own_cpu_us();
	struct py_runtime_file file;
	struct elf_file elf;

	*verdict = -1;
	if (!elf_file_open(&elf, path)) {
		py_runtime_file_examine(&elf, &file);
		*verdict = (int)file.verdict;
		elf_file_close(&elf);
	}
	*wall_us = clock_monotonic_us() - start;
	*cpu_us = own_cpu_us() - cpu;
}

/* Discovery's verdict from the worker: root opens, the worker reads, root checks the answer. */
static int verdict_in_worker(struct parser_client *client, const char *path, uint64_t *wall_us, uint64_t *cpu_us,
			     int *verdict)
{
	pid_t worker = parser_client_worker_pid(client);
	/* the worker's CPU read first: reading /proc is the bench's cost, not the worker's */
	uint64_t worker_cpu = process_cpu_us(worker), start = clock_monotonic_us(), cpu = own_cpu_us();
	struct py_runtime_file file;
	void *payload;
	size_t len;
	int fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	int err;

	if (fd < 0)
		return -1;
	err = parser_client_request(client, PARSER_REQUEST_PY_RUNTIME, fd, 0, sizeof(struct parser_py_runtime),
				    &payload, &len);
	close(fd);
	if (err || len != sizeof(struct parser_py_runtime) || py_runtime_file_from_wire(payload, &file)) {
		free(err ? NULL : payload);
		return -1;
	}
	free(payload);
	*verdict = (int)file.verdict;
	*wall_us = clock_monotonic_us() - start;
	*cpu_us = own_cpu_us() - cpu;
	*cpu_us += process_cpu_us(worker) - worker_cpu;
	return 0;
}

/* Discovery's verdict on each file, both ways. */
static int verdicts(struct parser_client *client, int count, char **paths)
{
	double worst = 0;
	const char *worst_name = "";

	printf("%-44s %9s %12s %12s %12s %12s\n", "verdict (median of 21)", "verdict", "inproc_ms", "worker_ms",
	       "inproc_cpu", "worker_cpu");
	for (int i = 0; i < count; i++) {
		uint64_t wall_in[ROUNDS], cpu_in[ROUNDS], wall_out[ROUNDS], cpu_out[ROUNDS];
		int verdict_in = -1, verdict_out = -1;
		const char *name = strrchr(paths[i], '/') ? strrchr(paths[i], '/') + 1 : paths[i];

		for (int round = 0; round < ROUNDS; round++) {
			verdict_in_process(paths[i], &wall_in[round], &cpu_in[round], &verdict_in);
			if (verdict_in_worker(client, paths[i], &wall_out[round], &cpu_out[round], &verdict_out)) {
				fprintf(stderr, "parser_cost: %s: the worker did not judge it\n", paths[i]);
				return 1;
			}
		}
		printf("%-44s %9d %12.3f %12.3f %12.3f %12.3f%s\n", name, verdict_out, median(wall_in, ROUNDS) / 1000.0,
		       median(wall_out, ROUNDS) / 1000.0, median(cpu_in, ROUNDS) / 1000.0,
		       median(cpu_out, ROUNDS) / 1000.0, verdict_in == verdict_out ? "" : " (verdicts differ!)");
		if (median(cpu_in, ROUNDS) && (double)median(cpu_out, ROUNDS) / (double)median(cpu_in, ROUNDS) > worst) {
			worst = (double)median(cpu_out, ROUNDS) / (double)median(cpu_in, ROUNDS);
			worst_name = name;
		}
	}
	printf("worst verdict, a file alone (one request): %s, cpu %.2fx\n", worst_name, worst);
	return 0;
}

/* A file's unwind table built in this process, as before the worker. */
static void table_in_process(const char *path, uint64_t *wall_us, uint64_t *cpu_us, size_t *rows)
{
	uint64_t start = clock_monotonic_us(), cpu = own_cpu_us();
	struct unwind_table table;
	struct errbuf error;
	int fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);

	*rows = 0;
	if (fd >= 0 && !unwind_table_build(fd, &table, &error)) {
		*rows = table.count;
		unwind_table_free(&table);
	}
	if (fd >= 0)
		close(fd);
	*wall_us = clock_monotonic_us() - start;
	*cpu_us = own_cpu_us() - cpu;
}

/* The same table the way root gets it now: from the worker, checked and indexed by root. */
static int table_in_worker(struct parser_client *client, const char *path, uint64_t *wall_us, uint64_t *cpu_us,
			   size_t *rows)
{
	pid_t worker = parser_client_worker_pid(client);
	/* the worker's CPU read first: reading /proc is the bench's cost, not the worker's */
	uint64_t worker_cpu = process_cpu_us(worker), start = clock_monotonic_us(), cpu = own_cpu_us();
	struct unwind_table table;
	struct errbuf error;
	int fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	int err;

	if (fd < 0)
		return -1;
	err = unwind_table_from_worker(client, fd, &table, &error);
	close(fd);
	if (err)
		return -1;
	*rows = table.count;
	unwind_table_free(&table);
	*wall_us = clock_monotonic_us() - start;
	*cpu_us = own_cpu_us() - cpu;
	*cpu_us += process_cpu_us(worker) - worker_cpu;
	return 0;
}

/* Each file's unwind table, both ways; "worker/inproc" is the ratio of the medians. */
static int tables(struct parser_client *client, int count, char **paths)
{
	double worst = 0;
	const char *worst_name = "";

	printf("%-44s %9s %12s %12s %12s %12s %8s\n", "unwind table (median of 21)", "rows", "inproc_ms",
	       "worker_ms", "inproc_cpu", "worker_cpu", "cpu_x");
	for (int i = 0; i < count; i++) {
		uint64_t wall_in[ROUNDS], cpu_in[ROUNDS], wall_out[ROUNDS], cpu_out[ROUNDS], cpu_in_ms, cpu_out_ms;
		size_t rows_in = 0, rows_out = 0;
		const char *name = strrchr(paths[i], '/') ? strrchr(paths[i], '/') + 1 : paths[i];

		for (int round = 0; round < ROUNDS; round++) {
			table_in_process(paths[i], &wall_in[round], &cpu_in[round], &rows_in);
			if (table_in_worker(client, paths[i], &wall_out[round], &cpu_out[round], &rows_out)) {
				fprintf(stderr, "parser_cost: %s: the worker built no table\n", paths[i]);
				return 1;
			}
		}
		cpu_in_ms = median(cpu_in, ROUNDS);
		cpu_out_ms = median(cpu_out, ROUNDS);
		printf("%-44s %9zu %12.2f %12.2f %12.2f %12.2f %8.2f%s\n", name, rows_out, median(wall_in, ROUNDS) / 1000.0,
		       median(wall_out, ROUNDS) / 1000.0, cpu_in_ms / 1000.0, cpu_out_ms / 1000.0,
		       cpu_in_ms ? (double)cpu_out_ms / (double)cpu_in_ms : 0.0, rows_in == rows_out ? "" : " (rows differ!)");
		if (cpu_in_ms && (double)cpu_out_ms / (double)cpu_in_ms > worst) {
			worst = (double)cpu_out_ms / (double)cpu_in_ms;
			worst_name = name;
		}
	}
	printf("worst table: %s, cpu %.2fx\n", worst_name, worst);
	return 0;
}


/* ---- a host's files: the whole set each way in a round ---- */

/* Files of a host set timed one by one (wall time: pinned to one CPU with the worker, which
 * inherits the bench's CPU and policy, a file's wall time is root's and the worker's CPU). */
#define HOST_MAX_FILES 512
enum { FILE_VERDICT_IN, FILE_VERDICT_WORKER, FILE_TABLE_IN, FILE_TABLE_WORKER, FILE_WAYS };
static uint64_t file_wall_us[FILE_WAYS][HOST_MAX_FILES][ROUNDS];
static int host_round;

struct cost {
	uint64_t wall_us, cpu_us;
};

/* A way's start: the worker's CPU read first (reading /proc is the bench's cost, not the worker's). */
static void cost_start(struct parser_client *client, struct cost *start, uint64_t *worker_cpu)
{
	*worker_cpu = client ? process_cpu_us(parser_client_worker_pid(client)) : 0;
	start->wall_us = clock_monotonic_us();
	start->cpu_us = own_cpu_us();
}

static void cost_end(struct parser_client *client, const struct cost *start, uint64_t worker_cpu, struct cost *out)
{
	out->wall_us = clock_monotonic_us() - start->wall_us;
	out->cpu_us = own_cpu_us() - start->cpu_us;
	if (client)
		out->cpu_us += process_cpu_us(parser_client_worker_pid(client)) - worker_cpu;
}

static void host_verdicts_in_process(int count, char **paths, struct cost *out)
{
	struct cost start;
	uint64_t unused;

	cost_start(NULL, &start, &unused);
	for (int i = 0; i < count; i++) {
		uint64_t wall, cpu;
		int verdict;

		verdict_in_process(paths[i], &wall, &cpu, &verdict);
		file_wall_us[FILE_VERDICT_IN][i][host_round] = wall;
	}
	cost_end(NULL, &start, 0, out);
}

/* One request a file, as discovery asked before batches. */
static int host_verdicts_each(struct parser_client *client, int count, char **paths, struct cost *out)
{
	struct cost start;
	uint64_t worker_cpu;

	cost_start(client, &start, &worker_cpu);
	for (int i = 0; i < count; i++) {
		struct py_runtime_file file;
		void *payload;
		size_t len;
		uint64_t file_start = clock_monotonic_us();
		int fd = open(paths[i], O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
		int err = fd < 0 ? -errno
				 : parser_client_request(client, PARSER_REQUEST_PY_RUNTIME, fd, 0,
							 sizeof(struct parser_py_runtime), &payload, &len);

		if (fd >= 0)
			close(fd);
		if (err || len != sizeof(struct parser_py_runtime) || py_runtime_file_from_wire(payload, &file))
			return -1;
		free(payload);
		file_wall_us[FILE_VERDICT_WORKER][i][host_round] = clock_monotonic_us() - file_start;
	}
	cost_end(client, &start, worker_cpu, out);
	return 0;
}

/* As discovery asks now: up to PARSER_MAX_BATCH_FILES files a request. */
static int host_verdicts_batched(struct parser_client *client, int count, char **paths, struct cost *out)
{
	struct parser_file_answer answers[PARSER_MAX_BATCH_FILES];
	int fds[PARSER_MAX_BATCH_FILES];
	struct cost start;
	uint64_t worker_cpu;
	int failed = 0;

	cost_start(client, &start, &worker_cpu);
	for (int first = 0; first < count && !failed; first += PARSER_MAX_BATCH_FILES) {
		size_t batch = (size_t)(count - first) < PARSER_MAX_BATCH_FILES ? (size_t)(count - first)
										 : PARSER_MAX_BATCH_FILES;
		size_t answered = 0, opened = 0;

		for (; opened < batch; opened++) {
			fds[opened] = open(paths[first + opened], O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
			if (fds[opened] < 0)
				break;
		}
		failed = opened < batch || parser_client_request_each(client, PARSER_REQUEST_PY_RUNTIMES, fds, batch,
								      sizeof(struct parser_py_runtime), answers,
								      &answered) || answered != batch;
		for (size_t i = 0; i < answered; i++) {
			struct py_runtime_file file;

			failed |= answers[i].status || answers[i].len != sizeof(struct parser_py_runtime) ||
				  py_runtime_file_from_wire(answers[i].payload, &file);
			free(answers[i].payload);
		}
		for (size_t i = 0; i < opened; i++)
			close(fds[i]);
	}
	cost_end(client, &start, worker_cpu, out);
	return failed ? -1 : 0;
}

static void host_tables_in_process(int count, char **paths, struct cost *out)
{
	struct cost start;
	uint64_t unused;

	cost_start(NULL, &start, &unused);
	for (int i = 0; i < count; i++) {
		uint64_t wall, cpu;
		size_t rows;

		table_in_process(paths[i], &wall, &cpu, &rows);
		file_wall_us[FILE_TABLE_IN][i][host_round] = wall;
	}
	cost_end(NULL, &start, 0, out);
}

static int host_tables_in_worker(struct parser_client *client, int count, char **paths, struct cost *out)
{
	struct cost start;
	uint64_t worker_cpu;

	cost_start(client, &start, &worker_cpu);
	for (int i = 0; i < count; i++) {
		struct unwind_table table;
		struct errbuf error;
		uint64_t file_start = clock_monotonic_us();
		int fd = open(paths[i], O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
		int err = fd < 0 ? -errno : unwind_table_from_worker(client, fd, &table, &error);

		if (fd >= 0)
			close(fd);
		file_wall_us[FILE_TABLE_WORKER][i][host_round] = clock_monotonic_us() - file_start;
		/* a file without unwind information has no table either way */
		if (err == -ENOENT || err == -ENODATA || err == -ENOEXEC)
			continue;
		if (err)
			return -1;
		unwind_table_free(&table);
	}
	cost_end(client, &start, worker_cpu, out);
	return 0;
}

static void print_way(const char *what, uint64_t *wall, uint64_t *cpu, uint64_t base_cpu)
{
	uint64_t cpu_median = median(cpu, ROUNDS);

	printf("%-40s %10.2f %10.2f %8.2f\n", what, median(wall, ROUNDS) / 1000.0, cpu_median / 1000.0,
	       base_cpu ? (double)cpu_median / (double)base_cpu : 1.0);
}

/* The file of the set that the worker slows most, in, out: the ways compared; by the medians. */
static void print_worst_file(const char *what, int count, char **paths, int in, int out)
{
	double worst = 0;
	int worst_file = 0;
	uint64_t worst_in = 0, worst_out = 0;

	for (int i = 0; i < count; i++) {
		uint64_t in_us = median(file_wall_us[in][i], ROUNDS), out_us = median(file_wall_us[out][i], ROUNDS);

		if (in_us && (double)out_us / (double)in_us > worst) {
			worst = (double)out_us / (double)in_us;
			worst_file = i;
			worst_in = in_us;
			worst_out = out_us;
		}
	}
	printf("worst %s: %s, %.3f ms in process, %.3f ms by the worker (%.2fx)\n", what,
	       strrchr(paths[worst_file], '/') ? strrchr(paths[worst_file], '/') + 1 : paths[worst_file],
	       worst_in / 1000.0, worst_out / 1000.0, worst);
}

/* The host's files each way, ROUNDS rounds; totals' medians and the CPU against in process. */
static int host(struct parser_client *client, int count, char **paths)
{
	enum { VERDICTS_IN, VERDICTS_EACH, VERDICTS_BATCHED, TABLES_IN, TABLES_WORKER, BOTH_IN, BOTH_WORKER, WAYS };
	static const char *const names[WAYS] = {
		"discovery verdicts, in process", "discovery verdicts, worker, a file each",
		"discovery verdicts, worker, batched", "unwind tables, in process", "unwind tables, worker",
		"verdicts + tables, in process", "verdicts (batched) + tables, worker",
	};
	uint64_t wall[WAYS][ROUNDS], cpu[WAYS][ROUNDS], base;
	struct cost way[WAYS];

	if (count > HOST_MAX_FILES)
		return fprintf(stderr, "parser_cost: at most %d files\n", HOST_MAX_FILES), 1;
	for (int round = 0; round < ROUNDS; round++) {
		host_round = round;
		host_verdicts_in_process(count, paths, &way[VERDICTS_IN]);
		if (host_verdicts_each(client, count, paths, &way[VERDICTS_EACH]) ||
		    host_verdicts_batched(client, count, paths, &way[VERDICTS_BATCHED]))
			return fprintf(stderr, "parser_cost: the worker did not judge every file\n"), 1;
		host_tables_in_process(count, paths, &way[TABLES_IN]);
		if (host_tables_in_worker(client, count, paths, &way[TABLES_WORKER]))
			return fprintf(stderr, "parser_cost: the worker built not every table\n"), 1;
		way[BOTH_IN] = (struct cost){ way[VERDICTS_IN].wall_us + way[TABLES_IN].wall_us,
					      way[VERDICTS_IN].cpu_us + way[TABLES_IN].cpu_us };
		way[BOTH_WORKER] = (struct cost){ way[VERDICTS_BATCHED].wall_us + way[TABLES_WORKER].wall_us,
						  way[VERDICTS_BATCHED].cpu_us + way[TABLES_WORKER].cpu_us };
		for (int w = 0; w < WAYS; w++) {
			wall[w][round] = way[w].wall_us;
			cpu[w][round] = way[w].cpu_us;
		}
	}
	printf("host: %d files, each judged and its table built (median of %d rounds; cpu: root + worker)\n", count,
	       ROUNDS);
	printf("%-40s %10s %10s %8s\n", "way", "wall_ms", "cpu_ms", "cpu_x");
	for (int w = 0; w < WAYS; w++) {
		int baseline = w <= VERDICTS_BATCHED ? VERDICTS_IN : w <= TABLES_WORKER ? TABLES_IN : BOTH_IN;

		base = median(cpu[baseline], ROUNDS);
		print_way(names[w], wall[w], cpu[w], base);
	}
	print_worst_file("verdict (a file alone, one request)", count, paths, FILE_VERDICT_IN, FILE_VERDICT_WORKER);
	print_worst_file("table", count, paths, FILE_TABLE_IN, FILE_TABLE_WORKER);
	return 0;
}

int main(int argc, char **argv)
{
	bool host_files = argc > 1 && !strcmp(argv[1], "--host");
	struct parser_client_options options;
	struct parser_client *client;
	uint64_t start_us[ROUNDS];

	if (host_files) {
		argc--;
		argv++;
	}
	options = (struct parser_client_options){ .executable = argc > 1 ? argv[1] : NULL };
	if (argc < 3) {
		fprintf(stderr, "usage: parser_cost [--host] PYBPFPROF_BINARY FILE...\n");
		return 2;
	}
	for (int round = 0; round < ROUNDS; round++) {
		uint64_t start = clock_monotonic_us();

		if (parser_client_new(&options, &client) || parser_client_prepare(client)) {
			fprintf(stderr, "parser_cost: the worker does not start (run as root)\n");
			return 1;
		}
		start_us[round] = clock_monotonic_us() - start;
		parser_client_free(client);
	}
	printf("worker start (spawn, sandbox, ready): %.2f ms (median of %d)\n", median(start_us, ROUNDS) / 1000.0,
	       ROUNDS);
	if (parser_client_new(&options, &client) || parser_client_prepare(client))
		return 1;
	if (host_files) {
		int err = host(client, argc - 2, argv + 2);

		parser_client_free(client);
		return err;
	}
	printf("%-44s %9s %12s %12s %12s %12s\n", "file (median of 21)", "functions", "inproc_ms", "worker_ms",
	       "inproc_cpu", "worker_cpu");
	for (int i = 2; i < argc; i++) {
		uint64_t wall_in[ROUNDS], cpu_in[ROUNDS], wall_out[ROUNDS], cpu_out[ROUNDS];
		size_t functions_in = 0, functions_out = 0;
		const char *name = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];

		for (int round = 0; round < ROUNDS; round++) {
			in_process(argv[i], &wall_in[round], &cpu_in[round], &functions_in);
			if (in_worker(client, argv[i], &wall_out[round], &cpu_out[round], &functions_out)) {
				fprintf(stderr, "parser_cost: %s: the worker did not answer\n", argv[i]);
				return 1;
			}
		}
		printf("%-44s %9zu %12.2f %12.2f %12.2f %12.2f%s\n", name, functions_out, median(wall_in, ROUNDS) / 1000.0,
		       median(wall_out, ROUNDS) / 1000.0, median(cpu_in, ROUNDS) / 1000.0,
		       median(cpu_out, ROUNDS) / 1000.0, functions_in == functions_out ? "" : " (counts differ!)");
	}
	if (verdicts(client, argc - 2, argv + 2) || tables(client, argc - 2, argv + 2)) {
		parser_client_free(client);
		return 1;
	}
	parser_client_free(client);
	return 0;
}
