// SPDX-License-Identifier: MIT
/*
 * The resolver-and-writers pipeline of the stack cache tests (tests/unit/test_symbolize_stack_cache.c,
 * tests/e2e/test_stack_cache_mixed.c): records fed as the session feeds them, into every writer,
 * and the files and frames two pipelines made compared.
 */
#include "resolve_pipeline.h"

#include "formats/format_registry.h"
#include "symbolize/symbolize_native.h"
#include "util/memo_cache.h"

static const char *const formats[] = { "mojo", "tachyon", "collapsed", "svg", "pprof", "speedscope",
				       "pstats", "gecko", "gecko-gz", "jsonl" };
_Static_assert(sizeof(formats) / sizeof(formats[0]) == FORMAT_COUNT, "one writer a format");

static struct pf_writer *open_writer(const char *path, const char *format_name)
{
	const struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;
	struct pf_writer *writer = NULL;

	assert_int_equal(pf_writer_open(&writer, path, format_registry_find_name(format_name), &options), 0);
	return writer;
}

void pipeline_open(struct pipeline *pipeline, const char *name, bool keeping, bool native)
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

void pipeline_close(struct pipeline *pipeline)
{
	for (size_t i = 0; i < FORMAT_COUNT; i++)
		assert_int_equal(pf_writer_close(pipeline->writers[i]), 0);
	if (pipeline->resolver.native)
		symbolize_native_free(pipeline->resolver.native);
	sample_resolve_free(&pipeline->resolver);
}

/* One record as the session takes it: prefetch, resolve, every writer. */
void pipeline_feed(struct pipeline *pipeline, const struct fake_python *fake, const struct fake_record *buffer,
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

void assert_same_files(const struct pipeline *left, const struct pipeline *right)
{
	for (size_t i = 0; i < FORMAT_COUNT; i++)
		assert_same_file(left->paths[i], right->paths[i]);
}

void assert_same_frames(const struct pf_sample *left, const struct pf_sample *right)
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
bool has_frame_named(const struct pf_sample *sample, const char *name)
{
	for (size_t i = 0; i < sample->frame_count; i++)
		if (!strcmp(sample->frames[i].name, name))
			return true;
	return false;
}
