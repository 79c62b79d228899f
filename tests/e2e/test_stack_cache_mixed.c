// SPDX-License-Identifier: MIT
/*
 * Stacks kept for the records that repeat them (symbolize/sample_resolve.c) and what the
 * writers keep of stacks written before (formats/known_stacks.h): the same records through
 * a resolver that keeps stacks and one that keeps none give byte-identical files, with
 * repeats, a code object renamed and forgotten in the middle, truncated stacks, kernel
 * frames, several threads and mixed native stacks. The bounded cache under them
 * (util/memo_cache.h): its clock, its budgets, and that a hash alone never matches.
 * The Python frames are fake 3.11 code objects in this process (tests/lib/fake_python.h).
 */
#include "testlib.h"

#include <inttypes.h>

#include <unistd.h>
#include <zlib.h>

#include "fake_python.h"
#include "formats/format_registry.h"
#include "symbolize/sample_resolve.h"
#include "symbolize/symbolize_native.h"
#include "symbolize/symbolize_py.h"
#include "util/memo_cache.h"

/* Interpreter functions, as the test executable's symbols (the main executable is the interpreter's). */
INTERPRETER_FUNCTION(Py_BytesMain)
INTERPRETER_FUNCTION(_PyEval_EvalFrameDefault)

/* A resolver and the writers it feeds; keeping: whether it keeps stacks (else every record resolves anew). */
static const char *const formats[] = { "mojo", "tachyon", "collapsed", "svg", "pprof", "speedscope",
				       "pstats", "gecko", "gecko-gz", "jsonl" };
#define FORMAT_COUNT (sizeof(formats) / sizeof(formats[0]))

struct pipeline {
	struct sample_resolver resolver;
	struct pf_writer *writers[FORMAT_COUNT];
	char paths[FORMAT_COUNT][256];
};

static struct pf_writer *open_writer(const char *path, const char *format_name)
{
	const struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;
	struct pf_writer *writer = NULL;

	assert_int_equal(pf_writer_open(&writer, path, format_registry_find_name(format_name), &options), 0);
	return writer;
}

static void pipeline_open(struct pipeline *pipeline, const char *name, bool keeping, bool native)
{
	memset(pipeline, 0, sizeof(*pipeline));
	assert_int_equal(sample_resolve_init(&pipeline->resolver, NULL, NULL, 1000), 0);
	if (!keeping) {
		/* A cache with no room keeps nothing: every record is resolved and written from scratch. */
		memo_cache_free(&pipeline->resolver.stacks);
		memo_cache_init(&pipeline->resolver.stacks, 0, 0);
		memo_cache_free(&pipeline->resolver.python_stacks);
		memo_cache_init(&pipeline->resolver.python_stacks, 0, 0);
	}
	if (native) {
		pipeline->resolver.native = symbolize_native_new();
		assert_non_null(pipeline->resolver.native);
		pipeline->resolver.native_stacks = true;
	}
	for (size_t i = 0; i < FORMAT_COUNT; i++) {
		snprintf(pipeline->paths[i], sizeof(pipeline->paths[i]), "%s/%s.%s", test_tmpdir(), name, formats[i]);
		pipeline->writers[i] = open_writer(pipeline->paths[i], formats[i]);
	}
}

static void pipeline_close(struct pipeline *pipeline)
{
	for (size_t i = 0; i < FORMAT_COUNT; i++)
		assert_int_equal(pf_writer_close(pipeline->writers[i]), 0);
	if (pipeline->resolver.native)
		symbolize_native_free(pipeline->resolver.native);
	sample_resolve_free(&pipeline->resolver);
}

/* One record as the session takes it: prefetch, resolve, every writer. */
static void pipeline_feed(struct pipeline *pipeline, const struct fake_python *fake, const struct fake_record *buffer,
			  struct pf_sample *sample)
{
	sample_resolve_prefetch(&pipeline->resolver, &buffer->record, buffer->size, &fake->python);
	assert_int_equal(sample_resolve_record(&pipeline->resolver, &buffer->record, buffer->size, &fake->python,
					       sample), 0);
	for (size_t i = 0; i < FORMAT_COUNT; i++)
		assert_int_equal(pf_writer_add_sample(pipeline->writers[i], sample), 0);
}

static void assert_same_file(const char *left_path, const char *right_path)
{
	print_message("%s and %s\n", left_path, right_path);
	size_t left_len = 0, right_len = 0;
	uint8_t *left = read_whole_file(left_path, &left_len), *right = read_whole_file(right_path, &right_len);

	assert_non_null(left);
	assert_non_null(right);
	assert_true(left_len > 64);
	assert_int_equal(left_len, right_len);
	assert_memory_equal(left, right, left_len);
	free(left);
	free(right);
}

static void assert_same_files(const struct pipeline *left, const struct pipeline *right)
{
	for (size_t i = 0; i < FORMAT_COUNT; i++)
		assert_same_file(left->paths[i], right->paths[i]);
}

static void assert_same_frames(const struct pf_sample *left, const struct pf_sample *right)
{
	assert_int_equal(left->frame_count, right->frame_count);
	for (size_t i = 0; i < left->frame_count; i++) {
		const struct pf_frame *a = &left->frames[i], *b = &right->frames[i];

		assert_int_equal(a->kind, b->kind);
		assert_string_equal(a->file, b->file);
		assert_string_equal(a->name, b->name);
		assert_int_equal(a->line, b->line);
		assert_int_equal(a->end_line, b->end_line);
		assert_int_equal(a->column, b->column);
		assert_int_equal(a->end_column, b->end_column);
		assert_int_equal(a->opcode, b->opcode);
		assert_int_equal(a->function_line, b->function_line);
	}
}

/* Whether a sample has a frame of this name. */
static bool has_frame_named(const struct pf_sample *sample, const char *name)
{
	for (size_t i = 0; i < sample->frame_count; i++)
		if (!strcmp(sample->frames[i].name, name))
			return true;
	return false;
}

/* Mixed stacks: native pcs that differ but name the same functions share the kept stack, and the
 * files are the same as resolving each record anew. */
static void test_mixed_stacks_keyed_by_names(void **state)
{
	static struct pipeline keeping, fresh;
	static struct fake_record buffer;
	const size_t codes[] = { 7, 6, 5 };
	struct fake_python fake;
	struct pf_sample kept_sample, fresh_sample;
	uint64_t first_id = 0;

	(void)state;
	fake_python_init(&fake, 8);
	/* No such file is mapped: only the main executable is the interpreter's. */
	fake.python.runtime_file = (struct proc_file_id){ 0 };
	pipeline_open(&keeping, "mixed-keeping", true, true);
	pipeline_open(&fresh, "mixed-fresh", false, true);
	for (size_t n = 0; n < 12; n++) {
		/* Leaf first: in deflate (a pc that moves), one activation of the eval function, the bootstrap. */
		const uint64_t pcs[] = { (uint64_t)(uintptr_t)deflate + 16 + (n % 4) * 4,
					 (uint64_t)(uintptr_t)_PyEval_EvalFrameDefault + 4,
					 (uint64_t)(uintptr_t)Py_BytesMain + 4 };

		fake_python_record(&fake, &buffer, codes, 3, (uint32_t)(n % 2) * 2, NULL, 0);
		/* one activation ran all three frames: the outermost is its entry */
		((struct pbp_py_frame *)(buffer.bytes + sizeof(struct pbp_record)))[2].instr_offset |= PBP_PY_FRAME_ENTRY;
		fake_python_add_native(&buffer, pcs, 3, UNWIND_STOP_ROOT);
		buffer.record.time_ns = 1000000000ull + n * 1000000ull;
		pipeline_feed(&keeping, &fake, &buffer, &kept_sample);
		pipeline_feed(&fresh, &fake, &buffer, &fresh_sample);
		assert_same_frames(&kept_sample, &fresh_sample);
		assert_true(has_frame_named(&kept_sample, "deflate"));
		assert_true(has_frame_named(&kept_sample, "function_5"));
		if (n % 2 == 0) {
			if (!first_id)
				first_id = kept_sample.stack_id;
			assert_true(kept_sample.stack_id == first_id);
		}
	}
	/* Two leaf offsets: two stacks, whatever the pcs in deflate. */
	assert_int_equal(keeping.resolver.stack_misses, 2);
	pipeline_close(&keeping);
	pipeline_close(&fresh);
	assert_same_files(&keeping, &fresh);
	fake_python_free(&fake);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mixed_stacks_keyed_by_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
