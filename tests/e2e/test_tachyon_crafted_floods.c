// SPDX-License-Identifier: MIT
/* Crafted Tachyon files that flood a reader (a thread per sample, a stack repeated past every
 * count) through `pybpfprof dump` and `top`: each ends in bounded time and memory. */
#include <stdbool.h>

#include "testlib.h"
#include "util/exit_status.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <zstd.h>

#include "formats/tachyon/tachyon.h"
#include "formats/varint.h"
#include "profile/profile.h"

/* ---- small helpers ---- */

static char *tmp_path(const char *name)
{
	char *path = malloc(256);

	assert_non_null(path);
	snprintf(path, 256, "%s/%s", test_tmpdir(), name);
	return path;
}

/* ---- crafted files: a few bytes must not stand for unbounded work or memory ---- */

/*
 * A Tachyon file around sample data (zstd-compressed here), with one string ("a") and
 * one frame (index 0: a, line 1).
 */
static size_t write_crafted(const char *path, const uint8_t *raw, size_t raw_len,
			    uint32_t threads, uint64_t samples)
{
	static const uint8_t strings[] = { 1, 'a' };
	static const uint8_t frames[] = { 0, 0, 2, 0, 0, 0, TACHYON_OPCODE_NONE };
	size_t bound = ZSTD_compressBound(raw_len);
	uint8_t *file = calloc(1, TACHYON_HEADER_SIZE + bound + sizeof(strings) + sizeof(frames) +
				      TACHYON_FOOTER_SIZE);
	uint32_t magic = TACHYON_MAGIC, version = TACHYON_VERSION, compression = 1, config = 2;
	uint32_t one = 1;
	uint64_t start = 1, interval = 1000, tables, frame_table, size;
	size_t packed;

	assert_non_null(file);
	packed = ZSTD_compress(file + TACHYON_HEADER_SIZE, bound, raw, raw_len, 3);
	assert_false(ZSTD_isError(packed));
	tables = TACHYON_HEADER_SIZE + packed;
	memcpy(file + tables, strings, sizeof(strings));
	frame_table = tables + sizeof(strings);
	memcpy(file + frame_table, frames, sizeof(frames));
	size = frame_table + sizeof(frames) + TACHYON_FOOTER_SIZE;
	memcpy(file + TACHYON_OFF_MAGIC, &magic, 4);
	memcpy(file + TACHYON_OFF_VERSION, &version, 4);
	file[TACHYON_OFF_PYTHON] = 3;
	file[TACHYON_OFF_PYTHON + 1] = 15;
	memcpy(file + TACHYON_OFF_START, &start, 8);
	memcpy(file + TACHYON_OFF_INTERVAL, &interval, 8);
	memcpy(file + TACHYON_OFF_SAMPLES, &samples, 8);
	memcpy(file + TACHYON_OFF_THREADS, &threads, 4);
	memcpy(file + TACHYON_OFF_STRINGS, &tables, 8);
	memcpy(file + TACHYON_OFF_FRAMES, &frame_table, 8);
	memcpy(file + TACHYON_OFF_COMPRESSION, &compression, 4);
	memcpy(file + TACHYON_OFF_CONFIG, &config, 4);
	memcpy(file + size - TACHYON_FOOTER_SIZE + TACHYON_FOOTER_OFF_STRINGS, &one, 4);
	memcpy(file + size - TACHYON_FOOTER_SIZE + TACHYON_FOOTER_OFF_FRAMES, &one, 4);
	memcpy(file + size - TACHYON_FOOTER_SIZE + TACHYON_FOOTER_OFF_FILE_SIZE, &size, 8);
	assert_int_equal(write_whole_file(path, file, size), 0);
	free(file);
	return size;
}

#define ARRAY_LENGTH(a) (sizeof(a) / sizeof((a)[0]))

/* A FULL record with an empty stack: 16 bytes that start thread tid. */
static void put_empty_full(uint8_t *at, uint64_t tid)
{
	uint32_t iid = 0;

	memcpy(at, &tid, 8);
	memcpy(at + 8, &iid, 4);
	at[12] = TACHYON_ENC_FULL;
	at[13] = 1; /* delta */
	at[14] = 0; /* status */
	at[15] = 0; /* depth */
}

/* A ceiling on a reader's address space (the plain build: sanitizers reserve far more):
 * well above what these files really need. */
#define READER_MEMORY_LIMIT "--as=67108864" /* 64 MiB */

/*
 * 200 KB that start 200000 threads, one record each (zstd takes 1 byte a thread): the
 * state kept per thread must be small enough to read them under the limit. The same
 * records behind a header that claims 4 billion threads are refused before any.
 */
static void test_crafted_thread_flood(void **unused)
{
	enum { THREADS = 200000 };
	char *path = tmp_path("threads.bin"), err[1024];
	char *argv[] = { (char *)pybpfprof_binary(), "dump", "--samples", path, NULL };
	uint8_t *raw = malloc((size_t)THREADS * 16);
	size_t size;
	int status;

	(void)unused;
	assert_non_null(raw);
	for (size_t i = 0; i < THREADS; i++)
		put_empty_full(raw + i * 16, 1000 + i);
	size = write_crafted(path, raw, (size_t)THREADS * 16, THREADS, THREADS);
	status = run_limited(READER_MEMORY_LIMIT, argv, err, sizeof(err));
	print_message("%zu-byte file, %d threads -> exit %d: %s", size, THREADS, status, err);
	assert_int_equal(status, 0);

	write_crafted(path, raw, (size_t)THREADS * 16, UINT32_MAX, THREADS);
	status = run_limited(READER_MEMORY_LIMIT, argv, err, sizeof(err));
	print_message("the same, 4294967295 threads in the header -> exit %d: %s", status, err);
	assert_int_equal(status, EXIT_STATUS_TARGET);
	assert_non_null(strstr(err, "header claims 4294967295 threads"));
	free(raw);
	free(path);
}

/* A thread's first sample (depth frames of frame 0), then one REPEAT of it count times. */
static size_t repeat_flood(uint8_t *raw, uint32_t depth, uint64_t count)
{
	uint64_t tid = 1000;
	uint32_t iid = 0;
	size_t used = 0;

	memcpy(raw, &tid, 8);
	memcpy(raw + 8, &iid, 4);
	raw[12] = TACHYON_ENC_FULL;
	raw[13] = 1; /* delta */
	raw[14] = 0; /* status */
	used = 15 + varint_leb128_encode(depth, raw + 15);
	memset(raw + used, 0, depth); /* frame 0, depth times */
	used += depth;
	memcpy(raw + used, &tid, 8);
	memcpy(raw + used + 8, &iid, 4);
	raw[used + 12] = TACHYON_ENC_REPEAT;
	used += 13;
	used += varint_leb128_encode(count, raw + used);
	for (uint64_t i = 0; i < count; i++) {
		raw[used++] = 1; /* delta */
		raw[used++] = 0; /* status */
	}
	return used;
}

/*
 * A few KiB of zstd that decode to millions of samples: 32 million of an empty stack
 * (past the sample budget), 1 million of a 256-frame one (past the frame budget).
 * `top` refuses both at the REPEAT, in one line, rather than work for minutes.
 */
static void test_crafted_repeat_flood(void **unused)
{
	static const struct { uint32_t depth; uint64_t count; const char *what; } floods[] = {
		{ 0, 32000000, "samples from a" },
		{ 256, 1000000, "frames from a" },
	};
	char *path = tmp_path("repeats.bin"), err[1024];
	char *argv[] = { (char *)pybpfprof_binary(), "top", path, NULL };

	(void)unused;
	for (size_t i = 0; i < ARRAY_LENGTH(floods); i++) {
		uint8_t *raw = malloc(64 + floods[i].depth + floods[i].count * 2);
		size_t size, used;
		int status;

		assert_non_null(raw);
		used = repeat_flood(raw, floods[i].depth, floods[i].count);
		size = write_crafted(path, raw, used, 1, 1 + floods[i].count);
		free(raw);
		status = run_limited(READER_MEMORY_LIMIT, argv, err, sizeof(err));
		print_message("%zu-byte file, %" PRIu64 " repeats of %" PRIu32 " frames -> exit %d: %s",
			      size, floods[i].count, floods[i].depth, status, err);
		assert_int_equal(status, EXIT_STATUS_TARGET);
		assert_non_null(strstr(err, floods[i].what));
		assert_non_null(strstr(err, "corrupt or crafted"));
	}
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crafted_thread_flood),
		cmocka_unit_test(test_crafted_repeat_flood),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
