// SPDX-License-Identifier: MIT
/*
 * The compact unwind tables (include/unwind_table.h): rows of a program the
 * test compiles, checked against readelf's interpretation of the same CFI;
 * the interpreters' real files (supported share, the PLT, _start); files
 * without CFI, truncated and not ELF at all.
 */
#include "unwind_fixtures.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <stddef.h>
#include <sys/stat.h>

#include "elf/elf_file.h"
#include "worker/unwind_build.h"
#include "util/array.h"
#include "util/clock.h"

static void test_rows_match_readelf(void **state)
{
	struct unwind_table table;
	struct errbuf error;
	unsigned rsp_rows = 0, rbp_rows = 0;
	char path[512];

	(void)state;
	compile_program(path, sizeof(path), "cfi_program", "-O2 -fomit-frame-pointer -fasynchronous-unwind-tables", "");
	assert_int_equal(build_table(path, &table, &error), 0);
	assert_int_equal(table.source, UNWIND_CFI_EH_FRAME);
	assert_int_equal(table.id.kind, UNWIND_FILE_ID_INODE);
	assert_int_equal(table.rows[table.count - 1].kind, UNWIND_ROW_GAP);
	for (size_t i = 1; i < table.count; i++)
		assert_true(table.rows[i - 1].pc < table.rows[i].pc);
	check_function_against_readelf(path, &table, "pushes", &rsp_rows, &rbp_rows);
	check_function_against_readelf(path, &table, "framed", &rsp_rows, &rbp_rows);
	assert_true(rsp_rows > 0);
	assert_true(rbp_rows > 0);
	check_start_is_root(path, &table);
	check_file_against_readelf(path, &table);
	unwind_table_free(&table);
	check_same_table(path);
}

/* The functions' ranges, from their FDEs alone: each function symbol's [address, address + size). */
static void test_function_starts_are_the_symbols(void **state)
{
	static const char *const names[] = { "leaf", "pushes", "framed", "main" };
	struct unwind_function_range *ranges;
	struct errbuf error;
	size_t count;
	char path[512];
	int fd;

	(void)state;
	compile_program(path, sizeof(path), "cfi_starts", "-O2 -fasynchronous-unwind-tables", "");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(unwind_table_function_starts(fd, &ranges, &count, &error), 0);
	close(fd);
	assert_true(count >= ARRAY_SIZE(names));
	for (size_t i = 1; i < count; i++)
		assert_true(ranges[i - 1].start <= ranges[i].start);
	for (size_t n = 0; n < ARRAY_SIZE(names); n++) {
		const struct unwind_function_range *range;
		uint64_t start, size;

		function_range(path, names[n], &start, &size);
		range = array_last_at_or_below_u64(ranges, count, sizeof(*ranges),
						   offsetof(struct unwind_function_range, start), start + size - 1);
		assert_non_null(range);
		assert_int_equal(range->start, start);
		assert_int_equal(range->end, start + size);
	}
	free(ranges);
	/* no .eh_frame: said so */
	fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_true(unwind_table_function_starts(fd, &ranges, &count, &error) < 0);
	assert_null(ranges);
	close(fd);
}

static void test_debian_python311(void **state)
{
	(void)state;
	check_real_file("/usr/bin/python3.11", true);
}

static void test_libc(void **state)
{
	(void)state;
	check_real_file("/lib/x86_64-linux-gnu/libc.so.6", false);
}

struct path_list {
	char (*items)[PATH_MAX];
	size_t count;
	size_t capacity;
};

/* Remembered states past the bound: the rest of the function has no rule, the rows before keep theirs. */
static void test_remembered_states_are_bounded(void **state)
{
	struct unwind_table table;
	struct errbuf error;
	uint64_t start, size;
	char path[512], text[8192];
	size_t used;

	(void)state;
	used = (size_t)snprintf(text, sizeof(text), "\t.text\n\t.globl deep\n\t.type deep, @function\ndeep:\n"
				"\t.cfi_startproc\n\tnop\n\t.cfi_def_cfa_offset 16\n");
	for (int i = 0; i < 100; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used, "\t.cfi_remember_state\n");
	snprintf(text + used, sizeof(text) - used, "\tnop\n\t.cfi_def_cfa_offset 24\n\tret\n\t.cfi_endproc\n"
		 "\t.size deep, .-deep\n");
	assemble_text(path, sizeof(path), "deep_states", text);
	function_range(path, "deep", &start, &size);
	assert_int_equal(build_table(path, &table, &error), 0);
	assert_int_equal(table.count, 3);
	assert_int_equal(table.rows[0].pc, start);
	assert_int_equal(table.rows[0].kind, UNWIND_ROW_CFA_RSP);
	assert_int_equal(table.rows[0].cfa_offset8, 1);
	assert_int_equal(table.rows[1].pc, start + 1);
	assert_int_equal(table.rows[1].kind, UNWIND_ROW_UNSUPPORTED);
	assert_int_equal(table.rows[2].pc, start + size);
	assert_int_equal(table.rows[2].kind, UNWIND_ROW_GAP);
	unwind_table_free(&table);
}

/* ---- bad files ---- */

static char last_error[ERRBUF_SIZE];

static void expect_failure(const char *path, int expected)
{
	struct unwind_table table;
	struct errbuf error;
	int err = build_table(path, &table, &error);

	assert_true(err < 0);
	if (expected)
		assert_int_equal(err, expected);
	assert_true(strlen(error.text) > 0);
	assert_null(table.rows);
	assert_int_equal(table.count, 0);
	print_message("%s: %s\n", strrchr(path, '/') + 1, error.text);
	snprintf(last_error, sizeof(last_error), "%s", error.text);
}

static void test_no_cfi(void **state)
{
	char path[512], after[1024];

	(void)state;
	snprintf(after, sizeof(after), "&& objcopy --remove-section=.eh_frame --remove-section=.eh_frame_hdr %s/no_cfi",
		 test_tmpdir());
	compile_program(path, sizeof(path), "no_cfi", "-O2 -fno-asynchronous-unwind-tables -fno-unwind-tables", after);
	expect_failure(path, -ENODATA);
}

static void test_not_elf(void **state)
{
	char path[512];
	static const char text[] = "#!/bin/sh\necho this is not an ELF file\n";

	(void)state;
	snprintf(path, sizeof(path), "%s/not_elf", test_tmpdir());
	assert_int_equal(write_whole_file(path, text, sizeof(text) - 1), 0);
	expect_failure(path, -ENOEXEC);
	assert_int_equal(write_whole_file(path, "", 0), 0);
	expect_failure(path, -ENOEXEC);
}

/* Cut at many lengths: an error (or, where the cut spares what is read, a table), never a crash. */
static void test_truncated_elf(void **state)
{
	char path[512], cut[512];
	uint8_t *data;
	size_t len, failures = 0, lengths = 0;

	(void)state;
	compile_program(path, sizeof(path), "to_truncate", "-O2 -fasynchronous-unwind-tables", "");
	data = read_whole_file(path, &len);
	assert_non_null(data);
	snprintf(cut, sizeof(cut), "%s/truncated", test_tmpdir());
	for (size_t keep = 0; keep < len; keep += keep < 128 ? 7 : len / 61 + 1) {
		struct unwind_table table;
		struct errbuf error;
		int err;

		assert_int_equal(write_whole_file(cut, data, keep), 0);
		err = build_table(cut, &table, &error);
		lengths++;
		if (err) {
			assert_true(strlen(error.text) > 0);
			assert_null(table.rows);
			failures++;
		}
		unwind_table_free(&table);
	}
	assert_int_equal(write_whole_file(cut, data, len - 1), 0);
	free(data);
	expect_failure(cut, -ENOEXEC);
	assert_non_null(strstr(last_error, "truncated"));
	print_message("%zu of %zu cut lengths refused\n", failures, lengths);
	assert_true(failures > 0);
}

/* A library of many small functions in assembly with CFI directives: each pushes and pops rbx `pushes` times. */
static void assemble_library(char *path, size_t len, const char *name, unsigned functions, unsigned pushes)
{
	char source[512], command[1536];
	FILE *out;

	snprintf(source, sizeof(source), "%s/%s.s", test_tmpdir(), name);
	snprintf(path, len, "%s/%s.so", test_tmpdir(), name);
	out = fopen(source, "w");
	assert_non_null(out);
	fprintf(out, "\t.text\n");
	for (unsigned f = 0; f < functions; f++) {
		fprintf(out, "\t.globl f%u\n\t.type f%u, @function\nf%u:\n\t.cfi_startproc\n", f, f, f);
		for (unsigned i = 0; i < pushes; i++)
			fprintf(out, "\tpushq %%rbx\n\t.cfi_adjust_cfa_offset 8\n");
		for (unsigned i = 0; i < pushes; i++)
			fprintf(out, "\tpopq %%rbx\n\t.cfi_adjust_cfa_offset -8\n");
		fprintf(out, "\tret\n\t.cfi_endproc\n\t.size f%u, .-f%u\n", f, f);
	}
	assert_int_equal(fclose(out), 0);
	snprintf(command, sizeof(command), "cc -shared -nostdlib -o %s %s", path, source);
	assert_int_equal(system(command), 0);
}

/* Past UNWIND_TABLE_MAX_ROWS the file gets no table, and says why. */
static void test_too_many_rows(void **state)
{
	char path[512];

	(void)state;
	/* 2 * 9 rows per function (the first merges with the previous function's last) */
	assemble_library(path, sizeof(path), "many_rows", UNWIND_TABLE_MAX_ROWS / 18 + 1000, 9);
	expect_failure(path, -E2BIG);
	assert_non_null(strstr(last_error, "over the limit"));
}

/* Adjacent functions: no GAP between them, and where one's last rule is the next one's first, one row. */
static void test_adjacent_functions_share_no_gap(void **state)
{
	struct unwind_table table;
	struct errbuf error;
	uint64_t first, last, size;
	char path[512];

	(void)state;
	assemble_library(path, sizeof(path), "adjacent", 3, 2);
	assert_int_equal(build_table(path, &table, &error), 0);
	function_range(path, "f0", &first, &size);
	function_range(path, "f2", &last, &size);
	/* f0: rsp+8, +16, +24, +16, +8 (ret); f1 and f2 the same, their first row merged: 1 + 3 * 4 rows, a GAP */
	assert_int_equal(table.count, 14);
	for (size_t i = 0; i + 1 < table.count; i++) {
		assert_true(table.rows[i].pc >= first && table.rows[i].pc < last + size);
		assert_int_equal(table.rows[i].kind, UNWIND_ROW_CFA_RSP);
	}
	assert_int_equal(table.rows[table.count - 1].pc, last + size);
	assert_int_equal(table.rows[table.count - 1].kind, UNWIND_ROW_GAP);
	unwind_table_free(&table);
}

/* One function of 80k rows: built in one pass over its 400 KB program. libdw row by row
 * would replay that program 80k times (32 GB): the per-row builder refuses it. */
static void test_long_function(void **state)
{
	struct unwind_table table;
	struct errbuf error;
	char path[512];
	uint64_t started;
	int fd;

	(void)state;
	assemble_library(path, sizeof(path), "long_function", 1, 40000);
	started = clock_monotonic_ms();
	assert_int_equal(build_table(path, &table, &error), 0);
	print_message("built in %" PRIu64 " ms, %" PRIu64 " CFI bytes interpreted\n", clock_monotonic_ms() - started,
		      table.stats.work);
	/* rsp+8, +16 .. +320008 .. +16, +8 (the ret), then the GAP */
	assert_int_equal(table.count, 2 * 40000 + 2);
	assert_int_equal(table.rows[40000].kind, UNWIND_ROW_CFA_RSP);
	assert_int_equal(table.rows[40000].cfa_offset8, 40001);
	assert_int_equal(table.rows[table.count - 1].kind, UNWIND_ROW_GAP);
	unwind_table_free(&table);

	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(unwind_table_build_per_row(fd, &table, &error), -E2BIG);
	close(fd);
	assert_non_null(strstr(error.text, "too costly"));
}

/* The file offset and size of a section, for corrupting it. */
static void section_extent(const char *path, const char *name, uint64_t *offset, uint64_t *size)
{
	char command[1024], line[512];
	FILE *pipe;
	bool found = false;

	snprintf(command, sizeof(command), "readelf -SW %s", path);
	pipe = popen(command, "r");
	assert_non_null(pipe);
	while (fgets(line, sizeof(line), pipe)) {
		char section[64], type[64];
		uint64_t addr;
		char *bracket = strchr(line, ']');

		if (bracket && sscanf(bracket + 1, "%63s %63s %" SCNx64 " %" SCNx64 " %" SCNx64, section, type, &addr,
				      offset, size) == 5 && !strcmp(section, name))
			found = true;
		if (found)
			break;
	}
	pclose(pipe);
	assert_true(found);
}

/* Random bytes in .eh_frame and its index: a table or an error, never a crash (ASan watches). */
static void test_corrupted_cfi(void **state)
{
	char path[512], corrupt[512];
	uint64_t eh_frame, eh_frame_size, hdr, hdr_size;
	unsigned seed = 12345, built = 0, rounds = 300;
	uint8_t *data;
	size_t len;

	(void)state;
	compile_program(path, sizeof(path), "to_corrupt", "-O2 -fasynchronous-unwind-tables", "");
	section_extent(path, ".eh_frame", &eh_frame, &eh_frame_size);
	section_extent(path, ".eh_frame_hdr", &hdr, &hdr_size);
	data = read_whole_file(path, &len);
	assert_non_null(data);
	assert_true(eh_frame + eh_frame_size <= len && hdr + hdr_size <= len);
	snprintf(corrupt, sizeof(corrupt), "%s/corrupt", test_tmpdir());
	for (unsigned round = 0; round < rounds; round++) {
		uint8_t *copy = malloc(len);
		struct unwind_table table;
		struct errbuf error;

		assert_non_null(copy);
		memcpy(copy, data, len);
		for (int i = 0; i < 1 + (int)(round % 8); i++) {
			bool in_hdr = rand_r(&seed) % 4 == 0;
			uint64_t at = in_hdr ? hdr + (uint64_t)rand_r(&seed) % hdr_size
					     : eh_frame + (uint64_t)rand_r(&seed) % eh_frame_size;

			copy[at] = (uint8_t)rand_r(&seed);
		}
		assert_int_equal(write_whole_file(corrupt, copy, len), 0);
		free(copy);
		if (!build_table(corrupt, &table, &error)) {
			built++;
			assert_int_equal(table.rows[table.count - 1].kind, UNWIND_ROW_GAP);
		} else {
			assert_true(strlen(error.text) > 0);
		}
		unwind_table_free(&table);
	}
	free(data);
	print_message("%u of %u corrupted files still gave a table\n", built, rounds);
}

static void test_file_id_is_stable(void **state)
{
	struct unwind_file_id first, second;
	char path[512];
	int fd;

	(void)state;
	compile_program(path, sizeof(path), "identity", "-O2 -Wl,--build-id=none", "");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(unwind_table_file_id(fd, &first), 0);
	assert_int_equal(unwind_table_file_id(fd, &second), 0);
	close(fd);
	assert_int_equal(first.kind, UNWIND_FILE_ID_INODE);
	assert_int_equal(first.len, UNWIND_FILE_ID_MAX);
	assert_memory_equal(&first, &second, sizeof(first));
}

/* A file rewritten in place to another size (same inode, no build id to tell them apart) is
 * another file: its old rows must not serve its new code. Touched, it is the same file: a
 * file whose build failed is not built again for a touch. */
static void test_file_rewritten_in_place_is_another_file(void **state)
{
	struct unwind_file_id before, touched, after;
	char path[512], byte = 0;
	struct stat info;
	int fd;

	(void)state;
	compile_program(path, sizeof(path), "rewritten", "-O2 -Wl,--build-id=none", "");
	fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(unwind_table_file_id(fd, &before), 0);
	assert_int_equal(futimens(fd, NULL), 0);
	assert_int_equal(unwind_table_file_id(fd, &touched), 0);
	assert_memory_equal(before.bytes, touched.bytes, UNWIND_FILE_ID_MAX);
	assert_int_equal(fstat(fd, &info), 0);
	assert_int_equal(pwrite(fd, &byte, 1, info.st_size), 1);
	assert_int_equal(unwind_table_file_id(fd, &after), 0);
	close(fd);
	assert_memory_not_equal(before.bytes, after.bytes, UNWIND_FILE_ID_MAX);
}

/* Root reads a file's ELF header for its identity and nothing the header points to: a file
 * whose section headers (and so its notes) lie past its end still has one. */
static void test_file_id_reads_only_the_header(void **state)
{
	Elf64_Ehdr header = { .e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			      .e_ehsize = sizeof(Elf64_Ehdr), .e_shentsize = sizeof(Elf64_Shdr),
			      .e_shoff = (uint64_t)1 << 40, .e_shnum = 65000 };
	struct unwind_file_id id;
	char path[512];
	int fd;

	(void)state;
	memcpy(header.e_ident, ELFMAG, SELFMAG);
	header.e_ident[EI_CLASS] = ELFCLASS64;
	header.e_ident[EI_DATA] = ELFDATA2LSB;
	header.e_ident[EI_VERSION] = EV_CURRENT;
	snprintf(path, sizeof(path), "%s/header-only-%d.so", test_tmpdir(), (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, &header, sizeof(header)), (ssize_t)sizeof(header));
	assert_int_equal(unwind_table_file_id(fd, &id), 0);
	assert_int_equal(id.kind, UNWIND_FILE_ID_INODE);
	header.e_machine = EM_AARCH64;
	assert_int_equal(pwrite(fd, &header, sizeof(header), 0), (ssize_t)sizeof(header));
	assert_int_equal(unwind_table_file_id(fd, &id), -ENOEXEC);
	close(fd);
	unlink(path);
}

/* A copy of libz (anyone's: it claims libz's build id) is another file: it can never share, and
 * so never replace, libz's own table. */
static void test_copy_is_another_file(void **state)
{
	struct unwind_file_id original, copy;
	char path[512], command[1100];
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/libz-copy.so", test_tmpdir());
	snprintf(command, sizeof(command), "cp /lib/x86_64-linux-gnu/libz.so.1 %s", path);
	assert_int_equal(system(command), 0);
	fd = open("/lib/x86_64-linux-gnu/libz.so.1", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(unwind_table_file_id(fd, &original), 0);
	close(fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(unwind_table_file_id(fd, &copy), 0);
	close(fd);
	assert_int_equal(original.len, copy.len);
	/* the same bytes and build id, another inode: another key */
	assert_memory_not_equal(original.bytes, copy.bytes, original.len);
	unlink(path);
}

/* What a parser worker that lies might answer: root refuses it whole, before BPF sees a row. */
/* unwind_table_from_payload on a copy of len bytes of answer (it takes its payload). */
static int from_copy(const void *answer, size_t len, const struct unwind_code_ranges *code, struct unwind_table *table,
		     struct errbuf *error)
{
	void *payload = malloc(len ? len : 1);

	assert_non_null(payload);
	memcpy(payload, answer, len);
	return unwind_table_from_payload(payload, len, code, table, error);
}

static void test_lying_rows_refused(void **state)
{
	const struct unwind_code_ranges code = { .ranges = { { 0x1000, 0x3000 } }, .count = 1 };
	struct {
		struct parser_unwind_head head;
		struct unwind_row rows[4];
	} answer = {
		.head = { .row_count = 4, .source = UNWIND_CFI_EH_FRAME },
		.rows = { { .pc = 0x1000, .kind = UNWIND_ROW_CFA_RSP, .cfa_offset8 = 1 },
			  { .pc = 0x1004, .kind = UNWIND_ROW_CFA_RSP, .cfa_offset8 = 2 },
			  { .pc = 0x1010, .kind = UNWIND_ROW_CFA_RBP, .cfa_offset8 = 2, .rbp_offset8 = 2 },
			  { .pc = 0x3000, .kind = UNWIND_ROW_GAP } },
	};
	struct unwind_table table;
	struct errbuf error;

	(void)state;
	assert_int_equal(from_copy(&answer, sizeof(answer), &code, &table, &error), 0);
	assert_int_equal(table.count, 4);
	assert_int_equal(unwind_table_lookup(&table, 0x1012)->kind, UNWIND_ROW_CFA_RBP);
	unwind_table_free(&table);
	/* a length that does not add up, a head alone, a count past the rows */
	assert_int_equal(from_copy(&answer, sizeof(answer) - 1, &code, &table, &error), -EBADMSG);
	assert_int_equal(from_copy(&answer, sizeof(answer.head) - 1, &code, &table, &error), -EBADMSG);
	answer.head.row_count = UINT32_MAX;
	assert_int_equal(from_copy(&answer, sizeof(answer), &code, &table, &error), -EBADMSG);
	answer.head.row_count = 4;
	/* no rows at all, an unknown source */
	answer.head.row_count = 0;
	assert_int_equal(from_copy(&answer, sizeof(answer.head), &code, &table, &error), -EBADMSG);
	answer.head.row_count = 4;
	answer.head.source = 7;
	assert_int_equal(from_copy(&answer, sizeof(answer), &code, &table, &error), -EBADMSG);
	answer.head.source = UNWIND_CFI_DEBUG_FRAME;
	assert_int_equal(from_copy(&answer, sizeof(answer), &code, &table, &error), 0);
	unwind_table_free(&table);
	/* out of order, or two rows at one pc */
	answer.rows[1].pc = 0x0fff + 0x20;
	assert_int_equal(from_copy(&answer, sizeof(answer), &code, &table, &error), -EBADMSG);
	answer.rows[1].pc = 0x1000;
	assert_int_equal(from_copy(&answer, sizeof(answer), &code, &table, &error), -EBADMSG);
	answer.rows[1].pc = 0x1004;
	/* a kind BPF does not know */
	answer.rows[2].kind = UNWIND_ROW_GAP + 1;
	assert_int_equal(from_copy(&answer, sizeof(answer), &code, &table, &error), -EBADMSG);
	answer.rows[2].kind = UNWIND_ROW_CFA_RBP;
	/* a table that does not end with a GAP */
	answer.rows[3].kind = UNWIND_ROW_CFA_RSP;
	assert_int_equal(from_copy(&answer, sizeof(answer), &code, &table, &error), -EBADMSG);
	answer.rows[3].kind = UNWIND_ROW_GAP;
	/* rows outside the file's code: before it, past its end (another file's pcs) */
	answer.rows[0].pc = 0x0ff0;
	assert_int_equal(from_copy(&answer, sizeof(answer), &code, &table, &error), -EBADMSG);
	answer.rows[0].pc = 0x1000;
	answer.rows[3].pc = 0x3001;
	assert_int_equal(from_copy(&answer, sizeof(answer), &code, &table, &error), -EBADMSG);
	answer.rows[3].pc = 0x3000;
	assert_int_equal(from_copy(&answer, sizeof(answer), &code, &table, &error), 0);
	unwind_table_free(&table);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_match_readelf),
		cmocka_unit_test(test_debian_python311),
		cmocka_unit_test(test_libc),
		cmocka_unit_test(test_remembered_states_are_bounded),
		cmocka_unit_test(test_no_cfi),
		cmocka_unit_test(test_not_elf),
		cmocka_unit_test(test_truncated_elf),
		cmocka_unit_test(test_adjacent_functions_share_no_gap),
		cmocka_unit_test(test_too_many_rows),
		cmocka_unit_test(test_long_function),
		cmocka_unit_test(test_corrupted_cfi),
		cmocka_unit_test(test_file_id_is_stable),
		cmocka_unit_test(test_copy_is_another_file),
		cmocka_unit_test(test_file_rewritten_in_place_is_another_file),
		cmocka_unit_test(test_file_id_reads_only_the_header),
		cmocka_unit_test(test_function_starts_are_the_symbols),
		cmocka_unit_test(test_lying_rows_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
