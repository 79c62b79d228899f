// SPDX-License-Identifier: MIT
/*
 * Fixtures shared by the unwind table tests (tests/unit/test_unwind_table.c in process,
 * tests/e2e/test_unwind_table_worker.c through the parser worker): a program with known
 * CFI, readelf's interpretation of a file's CFI compared row by row with our table, the
 * checks every real file passes, and both builders compared on one file.
 */
#include "unwind_fixtures.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <sys/stat.h>

#include "elf/elf_file.h"
#include "util/array.h"
#include "util/clock.h"

/* Callee-saved registers in use across a call (pushes: rsp rows, rbp saved at CFA-N),
 * and alloca, which makes the compiler keep a frame pointer (rbp rows). */
static const char test_program[] =
	"#include <alloca.h>\n"
	"#include <string.h>\n"
	"__attribute__((noinline)) long leaf(long a) { __asm__ volatile(\"\" : : : \"memory\"); return a * 3; }\n"
	"__attribute__((noinline)) long pushes(long a, long b, long c, long d, long e) {\n"
	"  long x = leaf(a), y = leaf(b + x), z = leaf(c + y), w = leaf(d + z), v = leaf(e + w);\n"
	"  return x * y + z * w + v * a + b * c + d * e;\n"
	"}\n"
	"__attribute__((noinline)) long framed(int n) {\n"
	"  char *buffer = alloca((size_t)n + 1);\n"
	"  memset(buffer, n, (size_t)n);\n"
	"  buffer[n] = 0;\n"
	"  return leaf((long)strlen(buffer));\n"
	"}\n"
	"int main(int argc, char **argv) { (void)argv; return (int)(pushes(argc, 2, 3, 4, 5) + framed(argc + 10)); }\n";

void compile_program(char *path, size_t len, const char *name, const char *flags, const char *after)
{
	char source[256], command[1536];

	snprintf(source, sizeof(source), "%s/%s.c", test_tmpdir(), name);
	snprintf(path, len, "%s/%s", test_tmpdir(), name);
	assert_int_equal(write_whole_file(source, test_program, strlen(test_program)), 0);
	FORMAT(command, "cc %s -o %s %s %s", flags, path, source, after);
	assert_int_equal(system(command), 0);
}

int build_table(const char *path, struct unwind_table *table, struct errbuf *error)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err;

	assert_true(fd >= 0);
	err = unwind_table_build(fd, table, error);
	close(fd);
	return err;
}

void function_range(const char *path, const char *name, uint64_t *start, uint64_t *size)
{
	struct elf_file file;

	assert_int_equal(elf_file_open(&file, path), 0);
	assert_int_equal(elf_file_symbol(&file, name, start, size), 0);
	elf_file_close(&file);
}

/* ---- readelf's interpretation ---- */

struct readelf_row {
	uint64_t fde_start, fde_end; /* the FDE the row belongs to */
	uint64_t pc;
	char cfa[32]; /* "rsp+16", "rbp+16", "exp", "rdi+0" */
	char rbp[32]; /* "u" (not saved), "c-16", "r3 (rbx)" */
	char ra[32];  /* "c-8", or "u" */
};

typedef void (*readelf_row_fn)(const struct readelf_row *row, void *context);

/* Calls fn for every row `readelf --debug-dump=frames-interp` prints (the last one of a pc). */
static void readelf_each_row(const char *path, readelf_row_fn fn, void *context)
{
	char command[1024], line[1024];
	struct readelf_row row = { 0 }, pending = { 0 };
	bool has_pending = false;
	int rbp_column = -1, ra_column = -1;
	FILE *pipe;

	snprintf(command, sizeof(command), "readelf --debug-dump=frames-interp %s", path);
	pipe = popen(command, "r");
	assert_non_null(pipe);
	while (fgets(line, sizeof(line), pipe)) {
		char *fde = strstr(line, " FDE cie="), *range;
		char *tokens[32];
		int ntokens = 0;

		if (fde || strstr(line, " CIE") || strstr(line, "ZERO terminator")) {
			row.fde_start = row.fde_end = 0;
			rbp_column = ra_column = -1;
			if (fde && (range = strstr(fde, "pc=")))
				assert_int_equal(sscanf(range, "pc=%" SCNx64 "..%" SCNx64, &row.fde_start, &row.fde_end), 2);
			continue;
		}
		for (char *save = NULL, *token = strtok_r(line, " \t\n", &save); token && ntokens < 32;
		     token = strtok_r(NULL, " \t\n", &save)) {
			if (token[0] == '(' && ntokens)
				continue; /* "r3 (rbx)": the register's name, part of the previous column */
			tokens[ntokens++] = token;
		}
		if (!ntokens || row.fde_start == row.fde_end)
			continue;
		if (!strcmp(tokens[0], "LOC")) {
			for (int i = 0; i < ntokens; i++) {
				if (!strcmp(tokens[i], "rbp"))
					rbp_column = i;
				if (!strcmp(tokens[i], "ra"))
					ra_column = i;
			}
			continue;
		}
		if (ra_column <= 0)
			fail_msg("no ra column before: %s", line);
		row.pc = strtoull(tokens[0], NULL, 16);
		snprintf(row.cfa, sizeof(row.cfa), "%s", tokens[1]);
		snprintf(row.rbp, sizeof(row.rbp), "%s", rbp_column > 0 && rbp_column < ntokens ? tokens[rbp_column] : "u");
		snprintf(row.ra, sizeof(row.ra), "%s", ra_column < ntokens ? tokens[ra_column] : "?");
		if (has_pending && (pending.pc != row.pc || pending.fde_start != row.fde_start))
			fn(&pending, context);
		pending = row;
		has_pending = true;
	}
	if (has_pending)
		fn(&pending, context);
	pclose(pipe);
}

/* The rows of the FDE that covers one pc. */
struct fde_rows {
	uint64_t pc;
	struct readelf_row rows[256];
	size_t count;
};

static void collect_fde_row(const struct readelf_row *row, void *context)
{
	struct fde_rows *fde = context;

	if (row->fde_start <= fde->pc && fde->pc < row->fde_end) {
		assert_true(fde->count < ARRAY_SIZE(fde->rows));
		fde->rows[fde->count++] = *row;
	}
}

/* One of our rows in readelf's notation. */
static void describe_row(const struct unwind_row *row, char *cfa, char *rbp, size_t len)
{
	switch (row->kind) {
	case UNWIND_ROW_CFA_RSP:
	case UNWIND_ROW_CFA_RBP:
		snprintf(cfa, len, "%s+%u", row->kind == UNWIND_ROW_CFA_RSP ? "rsp" : "rbp", 8u * row->cfa_offset8);
		break;
	case UNWIND_ROW_PLT:
		snprintf(cfa, len, "exp");
		break;
	default:
		snprintf(cfa, len, "kind-%u", row->kind);
	}
	if (row->rbp_offset8)
		snprintf(rbp, len, "c-%u", 8u * row->rbp_offset8);
	else
		snprintf(rbp, len, "u");
}

/* Every readelf row of the function's FDE has our rule at its pc; ours start only where readelf's do. */
void check_function_against_readelf(const char *path, const struct unwind_table *table, const char *name,
					   unsigned *rsp_rows, unsigned *rbp_rows)
{
	static struct fde_rows fde;
	uint64_t size, fde_start, fde_end;
	const struct readelf_row *rows = fde.rows;

	memset(&fde, 0, sizeof(fde));
	function_range(path, name, &fde.pc, &size);
	readelf_each_row(path, collect_fde_row, &fde);
	assert_true(fde.count >= 2);
	fde_start = rows[0].fde_start;
	fde_end = rows[0].fde_end;
	assert_int_equal(rows[0].pc, fde_start);
	for (size_t i = 0; i < fde.count; i++) {
		const struct unwind_row *row = unwind_table_lookup(table, rows[i].pc);
		char cfa[32], rbp[32];

		assert_non_null(row);
		describe_row(row, cfa, rbp, sizeof(cfa));
		assert_string_equal(rows[i].ra, "c-8");
		assert_string_equal(cfa, rows[i].cfa);
		assert_string_equal(rbp, rows[i].rbp);
		*rsp_rows += row->kind == UNWIND_ROW_CFA_RSP;
		*rbp_rows += row->kind == UNWIND_ROW_CFA_RBP;
	}
	for (size_t r = 0; r < table->count; r++) {
		bool at_readelf_row = false;

		if (table->rows[r].pc < fde_start || table->rows[r].pc >= fde_end)
			continue;
		for (size_t i = 0; i < fde.count; i++)
			at_readelf_row |= rows[i].pc == table->rows[r].pc;
		assert_true(at_readelf_row);
	}
	/* past the function: not its last rule (another function's row, or a GAP) */
	assert_true(unwind_table_lookup(table, fde_end)->pc == fde_end);
}

/* What we should make of one readelf row, compared with what we made. */
struct file_comparison {
	const struct unwind_table *table;
	size_t rows, mismatches;
};

static bool is_simple_rule(const struct readelf_row *row)
{
	unsigned offset;
	char reg[8];

	return sscanf(row->cfa, "%3[rspb]+%u", reg, &offset) == 2 && (!strcmp(reg, "rsp") || !strcmp(reg, "rbp")) &&
	       !strcmp(row->ra, "c-8") && (!strcmp(row->rbp, "u") || !strncmp(row->rbp, "c-", 2));
}

static void compare_file_row(const struct readelf_row *row, void *context)
{
	struct file_comparison *comparison = context;
	const struct unwind_row *ours = unwind_table_lookup(comparison->table, row->pc);
	char cfa[32], rbp[32];
	bool same;

	comparison->rows++;
	assert_non_null(ours);
	describe_row(ours, cfa, rbp, sizeof(cfa));
	if (!strcmp(row->ra, "u"))
		same = ours->kind == UNWIND_ROW_ROOT;
	else if (!strcmp(row->cfa, "exp"))
		same = ours->kind == UNWIND_ROW_PLT || ours->kind == UNWIND_ROW_UNSUPPORTED;
	else if (is_simple_rule(row))
		same = !strcmp(cfa, row->cfa) && !strcmp(rbp, row->rbp);
	else
		same = ours->kind == UNWIND_ROW_UNSUPPORTED;
	if (!same && comparison->mismatches++ < 5)
		print_message("at 0x%" PRIx64 ": readelf says CFA %s rbp %s ra %s, we say kind %u CFA %s rbp %s\n",
			      row->pc, row->cfa, row->rbp, row->ra, ours->kind, cfa, rbp);
}

/* Every row readelf prints for the file, looked up in our table: the same rule. */
void check_file_against_readelf(const char *path, const struct unwind_table *table)
{
	struct file_comparison comparison = { .table = table };

	readelf_each_row(path, compare_file_row, &comparison);
	print_message("%s: %zu readelf rows compared, %zu differ\n", path, comparison.rows, comparison.mismatches);
	assert_true(comparison.rows > 0);
	assert_int_equal(comparison.mismatches, 0);
}

/* crt1's _start says its return address is undefined: the end of every stack. */
void check_start_is_root(const char *path, const struct unwind_table *table)
{
	uint64_t start, size;

	function_range(path, "_start", &start, &size);
	assert_int_equal(unwind_table_lookup(table, start)->kind, UNWIND_ROW_ROOT);
	assert_int_equal(unwind_table_lookup(table, start + size - 1)->kind, UNWIND_ROW_ROOT);
}

/* ---- the interpreters' files ---- */

static double supported_share(const struct unwind_table *table)
{
	size_t described = table->count - table->stats.by_kind[UNWIND_ROW_GAP];

	return described ? 1.0 - (double)table->stats.by_kind[UNWIND_ROW_UNSUPPORTED] / (double)described : 0;
}

/* Every pc of .plt past its first entry (PLT0 has plain rows) uses the PLT rule. */
static void check_plt(const char *path, const struct unwind_table *table)
{
	struct elf_file file;
	uint64_t plt, size;

	assert_int_equal(elf_file_open(&file, path), 0);
	assert_int_equal(elf_file_section(&file, ".plt", &plt, &size), 0);
	elf_file_close(&file);
	assert_true(size > 16);
	for (uint64_t pc = plt + 16; pc < plt + size; pc++) {
		const struct unwind_row *row = unwind_table_lookup(table, pc);

		assert_non_null(row);
		assert_int_equal(row->kind, UNWIND_ROW_PLT);
	}
}

/* The last row at or below pc by bisecting every row: what the page index must not change. */
static const struct unwind_row *row_without_index(const struct unwind_table *table, uint64_t pc)
{
	size_t low = 0, high = table->count;

	if (!table->count || pc < table->rows[0].pc)
		return NULL;
	while (high - low > 1) {
		size_t middle = low + (high - low) / 2;

		if (table->rows[middle].pc <= pc)
			low = middle;
		else
			high = middle;
	}
	return &table->rows[low];
}

/* The page index (what BPF narrows its search with) finds the same row at every row's edges
 * and page's edges, and below the first row and past the last. */
static void check_page_index(const struct unwind_table *table)
{
	uint64_t last_pc = table->rows[table->count - 1].pc;
	size_t pages = 0;

	assert_non_null(table->pages);
	assert_true(table->page_count >= 2);
	assert_int_equal(table->pages[table->page_count - 1], table->count - 1);
	for (size_t i = 0; i < table->count; i++) {
		uint64_t pc = table->rows[i].pc;

		for (uint64_t probe = pc ? pc - 1 : 0; probe <= pc + 1; probe++)
			assert_ptr_equal(unwind_table_lookup(table, probe), row_without_index(table, probe));
	}
	for (uint64_t page = table->page_base; page <= last_pc + 4096; page += 1u << UNWIND_PAGE_SHIFT, pages++) {
		assert_ptr_equal(unwind_table_lookup(table, page), row_without_index(table, page));
		assert_ptr_equal(unwind_table_lookup(table, page - 1), row_without_index(table, page - 1));
	}
	print_message("page index: %zu entries for %zu rows (%zu pages checked)\n", table->page_count, table->count,
		      pages);
}

void check_real_file(const char *path, bool has_start)
{
	struct unwind_table table;
	struct errbuf error;
	uint64_t started;
	int err;

	if (access(path, R_OK)) {
		print_message("%s: absent, skipped\n", path);
		skip();
	}
	started = clock_monotonic_us();
	err = build_table(path, &table, &error);
	if (err)
		fail_msg("%s: %s", path, error.text);
	print_message("%s: %zu rows (%zu bytes), %zu FDEs (%zu skipped), %zu CFI rows, %zu gaps, %zu plt, %zu root,"
		      " %zu unsupported, %.4f%% supported, %" PRIu64 " CFI bytes interpreted, built in %" PRIu64 " ms\n",
		      path, table.count, table.count * sizeof(struct unwind_row), table.stats.fdes,
		      table.stats.fdes_skipped, table.stats.cfi_rows, table.stats.by_kind[UNWIND_ROW_GAP],
		      table.stats.by_kind[UNWIND_ROW_PLT], table.stats.by_kind[UNWIND_ROW_ROOT],
		      table.stats.by_kind[UNWIND_ROW_UNSUPPORTED], 100 * supported_share(&table), table.stats.work,
		      (clock_monotonic_us() - started) / 1000);
	assert_true(supported_share(&table) >= 0.999);
	assert_int_equal(table.stats.fdes_skipped, 0);
	check_plt(path, &table);
	check_file_against_readelf(path, &table);
	check_page_index(&table);
	if (has_start)
		check_start_is_root(path, &table);
	unwind_table_free(&table);
}

/* ---- one pass against libdw row by row ---- */

uint64_t cpu_us(void)
{
	struct timespec now;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
	return (uint64_t)now.tv_sec * 1000000 + (uint64_t)now.tv_nsec / 1000;
}

static void describe_difference(const char *path, const struct unwind_table *one_pass,
				const struct unwind_table *per_row)
{
	for (size_t i = 0; i < one_pass->count && i < per_row->count; i++) {
		const struct unwind_row *a = &one_pass->rows[i], *b = &per_row->rows[i];

		if (memcmp(a, b, sizeof(*a)))
			fail_msg("%s: row %zu differs: one pass pc 0x%x kind %u cfa %u rbp %u, libdw pc 0x%x kind %u"
				 " cfa %u rbp %u", path, i, a->pc, a->kind, a->cfa_offset8, a->rbp_offset8, b->pc,
				 b->kind, b->cfa_offset8, b->rbp_offset8);
	}
	fail_msg("%s: %zu rows in one pass, %zu by libdw", path, one_pass->count, per_row->count);
}

/* Both builders on one file: the same outcome, the same rows, index and counts. */
void check_same_table(const char *path)
{
	struct unwind_table one_pass, per_row;
	struct errbuf one_pass_error, per_row_error;
	uint64_t started, one_pass_us, per_row_us;
	int fd = open(path, O_RDONLY | O_CLOEXEC), one_pass_err, per_row_err;

	assert_true(fd >= 0);
	started = cpu_us();
	one_pass_err = unwind_table_build(fd, &one_pass, &one_pass_error);
	one_pass_us = cpu_us() - started;
	started = cpu_us();
	per_row_err = unwind_table_build_per_row(fd, &per_row, &per_row_error);
	per_row_us = cpu_us() - started;
	close(fd);
	print_message("%s: %zu rows, %s; CPU %.1f ms in one pass, %.1f ms by libdw row by row\n", path, one_pass.count,
		      one_pass_err ? one_pass_error.text : "built", one_pass_us / 1000.0, per_row_us / 1000.0);
	if (one_pass_err != per_row_err)
		fail_msg("%s: one pass: %s (%d), libdw: %s (%d)", path, one_pass_error.text, one_pass_err,
			 per_row_error.text, per_row_err);
	if (one_pass.count != per_row.count ||
	    (one_pass.count && memcmp(one_pass.rows, per_row.rows, one_pass.count * sizeof(*one_pass.rows))))
		describe_difference(path, &one_pass, &per_row);
	assert_int_equal(one_pass.page_count, per_row.page_count);
	assert_int_equal(one_pass.page_base, per_row.page_base);
	if (one_pass.page_count)
		assert_memory_equal(one_pass.pages, per_row.pages, one_pass.page_count * sizeof(*one_pass.pages));
	assert_memory_equal(&one_pass.id, &per_row.id, sizeof(one_pass.id));
	assert_int_equal(one_pass.source, per_row.source);
	assert_int_equal(one_pass.stats.fdes, per_row.stats.fdes);
	assert_int_equal(one_pass.stats.fdes_skipped, per_row.stats.fdes_skipped);
	assert_int_equal(one_pass.stats.cfi_rows, per_row.stats.cfi_rows);
	assert_memory_equal(one_pass.stats.by_kind, per_row.stats.by_kind, sizeof(one_pass.stats.by_kind));
	unwind_table_free(&one_pass);
	unwind_table_free(&per_row);
}

/* The assembly text in a shared library of its own. */
void assemble_text(char *path, size_t len, const char *name, const char *text)
{
	char source[512], command[1536];

	snprintf(source, sizeof(source), "%s/%s.s", test_tmpdir(), name);
	snprintf(path, len, "%s/%s.so", test_tmpdir(), name);
	assert_int_equal(write_whole_file(source, text, strlen(text)), 0);
	snprintf(command, sizeof(command), "cc -shared -nostdlib -o %s %s", path, source);
	assert_int_equal(system(command), 0);
}

