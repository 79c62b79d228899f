// SPDX-License-Identifier: MIT
/*
 * The userspace row interpreter (unwind/stack_copy_unwind.h) on real stacks: this test's own
 * stack, copied a few calls deep, unwound with the tables of its real files (the test program,
 * libc) and checked against glibc's backtrace() (libgcc's unwinder, reading the same .eh_frame);
 * a copy cut short, a table still building, and hostile copies (a loop, words off the copy).
 */
#include "testlib.h"

#include <execinfo.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>

#include "sample_record.h"
#include "unwind/stack_copy_unwind.h"
#include "unwind/file_table.h"
#include "worker/unwind_build.h"

#define COPY_MAX (1u << 20)
#define OBJECTS_MAX 64
#define FRAMES_MAX 64

/* A loaded object of this process: where its segments lie, its load bias, its table once built. */
struct loaded_object {
	char path[PATH_MAX];
	uint64_t start, end; /* its lowest and highest PT_LOAD addresses */
	uint64_t bias;
	bool built;
	int build_err;
	struct unwind_table table;
};

struct objects {
	struct loaded_object items[OBJECTS_MAX];
	size_t count;
	bool building; /* every table answers "still building" (STACK_UNWIND_WAIT) */
};

static int note_object(struct dl_phdr_info *info, size_t size, void *context)
{
	struct objects *objects = context;
	struct loaded_object *object;

	(void)size;
	if (objects->count == OBJECTS_MAX)
		return 1;
	object = &objects->items[objects->count];
	memset(object, 0, sizeof(*object));
	object->start = UINT64_MAX;
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *phdr = &info->dlpi_phdr[i];

		if (phdr->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + phdr->p_vaddr < object->start)
			object->start = info->dlpi_addr + phdr->p_vaddr;
		if (info->dlpi_addr + phdr->p_vaddr + phdr->p_memsz > object->end)
			object->end = info->dlpi_addr + phdr->p_vaddr + phdr->p_memsz;
	}
	object->bias = info->dlpi_addr;
	snprintf(object->path, sizeof(object->path), "%s", info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe");
	if (object->start < object->end && access(object->path, R_OK) == 0)
		objects->count++;
	return 0;
}

static int table_at(void *ctx, uint64_t pc, const struct unwind_table **table, uint64_t *bias)
{
	struct objects *objects = ctx;

	for (size_t i = 0; i < objects->count; i++) {
		struct loaded_object *object = &objects->items[i];

		if (pc < object->start || pc >= object->end)
			continue;
		if (objects->building)
			return STACK_UNWIND_WAIT;
		if (!object->built) {
			struct errbuf error;
			int fd = open(object->path, O_RDONLY | O_CLOEXEC);

			object->build_err = fd < 0 ? -errno : unwind_table_build(fd, &object->table, &error);
			if (fd >= 0)
				close(fd);
			object->built = true;
		}
		if (object->build_err)
			return UNWIND_STOP_NO_TABLE;
		*table = &object->table;
		*bias = object->bias;
		return 0;
	}
	return UNWIND_STOP_NO_MAPPING;
}

static void free_objects(struct objects *objects)
{
	for (size_t i = 0; i < objects->count; i++)
		if (objects->items[i].built && !objects->items[i].build_err)
			unwind_table_free(&objects->items[i].table);
}

/* The end of the stack mapping holding addr, from /proc/self/maps. */
static uint64_t stack_end_of(uint64_t addr)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[512];
	uint64_t end = 0;

	assert_non_null(maps);
	while (fgets(line, sizeof(line), maps)) {
		unsigned long long lo, hi;

		if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && addr >= lo && addr < hi) {
			end = hi;
			break;
		}
	}
	fclose(maps);
	return end;
}

/* What BPF would have sent: the registers of a frame, its stack from sp up, and the oracle's
 * return addresses of the same moment. */
struct captured {
	uint64_t pc, sp, bp;
	uint8_t *bytes;
	size_t len;
	void *frames[FRAMES_MAX];
	int frame_count;
};

/* The stack holds ASan's poisoned redzones: copied byte by byte, unchecked, as BPF copies it. */
__attribute__((no_sanitize("address"), noinline)) static void copy_stack(uint8_t *to, const uint8_t *from, size_t len)
{
	for (size_t i = 0; i < len; i++)
		((volatile uint8_t *)to)[i] = from[i];
}

__attribute__((noinline)) static void capture(struct captured *out)
{
	uint64_t pc, sp, bp;

	/* One asm: pc's row describes rsp as it is here. */
	__asm__ volatile("lea (%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(pc), "=r"(sp), "=r"(bp));
	out->pc = pc;
	out->sp = sp;
	out->bp = bp;
	out->len = stack_end_of(sp) - sp;
	if (out->len > COPY_MAX)
		out->len = COPY_MAX;
	copy_stack(out->bytes, (const uint8_t *)(uintptr_t)sp, out->len);
	out->frame_count = backtrace(out->frames, FRAMES_MAX);
}

__attribute__((noinline)) static int nest(struct captured *out, int depth)
{
	int result;

	if (depth == 0) {
		capture(out);
		return 0;
	}
	result = nest(out, depth - 1) + depth;
	__asm__ volatile("" : "+r"(result)); /* not a tail call */
	return result;
}

static void capture_nested(struct captured *out, int depth)
{
	memset(out, 0, sizeof(*out));
	out->bytes = malloc(COPY_MAX);
	assert_non_null(out->bytes);
	assert_int_equal(nest(out, depth), depth * (depth + 1) / 2);
}

static int unwind_captured(const struct captured *captured, size_t copy_len, struct objects *objects,
			   const uint64_t *shims, size_t shim_count, uint64_t *pcs, size_t *count)
{
	struct stack_copy_view copy = { .sp = captured->sp, .bytes = captured->bytes, .len = copy_len,
					 .shims = shims, .shim_count = shim_count };

	pcs[0] = captured->pc;
	*count = 1;
	return stack_copy_unwind(&copy, captured->bp, table_at, objects, pcs, count, UNWIND_MAX_FRAMES);
}

/* The interpreter's callers are backtrace()'s, frame for frame, through the test program and
 * libc to the root. */
static void test_matches_backtrace(void **state)
{
	struct objects *objects = calloc(1, sizeof(*objects));
	struct captured captured;
	uint64_t pcs[UNWIND_MAX_FRAMES];
	size_t count, compared = 0;
	int stop;

	(void)state;
	assert_non_null(objects);
	dl_iterate_phdr(note_object, objects);
	capture_nested(&captured, 6);
	stop = unwind_captured(&captured, captured.len, objects, NULL, 0, pcs, &count);
	print_message("unwound %zu frames (stop %d), backtrace() %d\n", count, stop, captured.frame_count);
	for (int i = 0; i < captured.frame_count || (size_t)i < count; i++)
		print_message("  %2d %#18" PRIx64 " %18p\n", i, (size_t)i < count ? pcs[i] : 0,
			      i < captured.frame_count ? captured.frames[i] : NULL);
	/* backtrace()'s frame 0 is backtrace() (ASan's), 1 is capture() after its call: ours is capture() at
	 * the asm, then the same callers. */
	for (int i = 1; i + 1 < captured.frame_count && (size_t)i < count; i++) {
		if (pcs[i] != (uint64_t)(uintptr_t)captured.frames[i + 1])
			fail_msg("frame %d: %#" PRIx64 " where backtrace() has %p", i, pcs[i], captured.frames[i + 1]);
		compared++;
	}
	/* capture, nest x7, the test's callers (cmocka), main, libc's start */
	assert_true(compared >= 10);
	assert_int_equal(stop, UNWIND_STOP_ROOT);
	assert_int_equal(count + 1, (size_t)captured.frame_count);
	free(captured.bytes);
	free_objects(objects);
	free(objects);
}

/* A copy that ends before the walk does: the frames it held, then STACK_UNWIND_PAST_COPY. */
static void test_copy_cut_short(void **state)
{
	struct objects *objects = calloc(1, sizeof(*objects));
	struct captured captured;
	uint64_t pcs[UNWIND_MAX_FRAMES], whole[UNWIND_MAX_FRAMES];
	size_t count, whole_count;

	(void)state;
	assert_non_null(objects);
	dl_iterate_phdr(note_object, objects);
	capture_nested(&captured, 6);
	unwind_captured(&captured, captured.len, objects, NULL, 0, whole, &whole_count);
	assert_int_equal(unwind_captured(&captured, 256, objects, NULL, 0, pcs, &count), STACK_UNWIND_PAST_COPY);
	assert_true(count >= 2 && count < whole_count);
	assert_memory_equal(pcs, whole, count * sizeof(uint64_t));
	/* nothing copied: the stopping frame alone */
	assert_int_equal(unwind_captured(&captured, 0, objects, NULL, 0, pcs, &count), STACK_UNWIND_PAST_COPY);
	assert_int_equal(count, 1);
	free(captured.bytes);
	free_objects(objects);
	free(objects);
}

/* A table still building: the walk says so and keeps the frames it had. */
static void test_table_building(void **state)
{
	struct objects *objects = calloc(1, sizeof(*objects));
	struct captured captured;
	uint64_t pcs[UNWIND_MAX_FRAMES];
	size_t count;

	(void)state;
	assert_non_null(objects);
	dl_iterate_phdr(note_object, objects);
	objects->building = true;
	capture_nested(&captured, 2);
	assert_int_equal(unwind_captured(&captured, captured.len, objects, NULL, 0, pcs, &count), STACK_UNWIND_WAIT);
	assert_int_equal(count, 1);
	assert_int_equal(pcs[0], captured.pc);
	free(captured.bytes);
	free_objects(objects);
	free(objects);
}

/* A shim inside a frame marks that frame as BPF marks an eval activation's. */
static void test_shim_marks_its_frame(void **state)
{
	struct objects *objects = calloc(1, sizeof(*objects));
	struct captured captured;
	uint64_t pcs[UNWIND_MAX_FRAMES], whole[UNWIND_MAX_FRAMES], shim;
	size_t count, whole_count, marked = 0;

	(void)state;
	assert_non_null(objects);
	dl_iterate_phdr(note_object, objects);
	capture_nested(&captured, 3);
	unwind_captured(&captured, captured.len, objects, NULL, 0, whole, &whole_count);
	/* a word in the middle of the copy: inside exactly one frame */
	shim = captured.sp + 8;
	unwind_captured(&captured, captured.len, objects, &shim, 1, pcs, &count);
	assert_int_equal(count, whole_count);
	for (size_t i = 0; i < count; i++) {
		marked += (pcs[i] & PBP_NATIVE_PC_EVAL) != 0;
		assert_int_equal(pcs[i] & ~PBP_NATIVE_PC_EVAL, whole[i]);
	}
	assert_int_equal(marked, 1);
	assert_true(pcs[0] & PBP_NATIVE_PC_EVAL);
	free(captured.bytes);
	free_objects(objects);
	free(objects);
}

/* Hostile copies: a frame that does not grow, return addresses of 0, a stack pointing at itself. */
static void test_hostile_copy(void **state)
{
	struct objects *objects = calloc(1, sizeof(*objects));
	struct captured captured;
	uint64_t pcs[UNWIND_MAX_FRAMES];
	size_t count;
	int stop;

	(void)state;
	assert_non_null(objects);
	dl_iterate_phdr(note_object, objects);
	capture_nested(&captured, 2);
	/* every word the caller's pc: each frame's return address leads back into capture() */
	for (size_t i = 0; i + 8 <= captured.len; i += 8)
		memcpy(captured.bytes + i, &captured.pc, 8);
	stop = unwind_captured(&captured, captured.len, objects, NULL, 0, pcs, &count);
	assert_true(count <= UNWIND_MAX_FRAMES);
	assert_true(stop == STACK_UNWIND_PAST_COPY || stop == UNWIND_STOP_MAX_FRAMES || stop == UNWIND_STOP_NO_CFI ||
		    stop == UNWIND_STOP_BAD_FRAME);
	memset(captured.bytes, 0, captured.len);
	stop = unwind_captured(&captured, captured.len, objects, NULL, 0, pcs, &count);
	assert_int_equal(stop, UNWIND_STOP_BAD_FRAME);
	free(captured.bytes);
	free_objects(objects);
	free(objects);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches_backtrace),   cmocka_unit_test(test_copy_cut_short),
		cmocka_unit_test(test_table_building),      cmocka_unit_test(test_shim_marks_its_frame),
		cmocka_unit_test(test_hostile_copy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
