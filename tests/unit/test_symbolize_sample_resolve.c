// SPDX-License-Identifier: MIT
/*
 * symbolize/sample_resolve with native stacks: synthetic records of this very
 * process, whose pcs lie in real functions (libz's deflate; functions of this
 * executable named like the interpreter's, since the main executable counts as
 * the interpreter), merged with Python frames; C++ names demangled. Kernel
 * frames named through a namer, each new address once, a record's in one batch.
 */
#include "native_records.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "symbolize/sample_resolve.h"
#include "symbolize/symbolize_native.h"
#include "proc/proc_maps.h"

/* A pc in no file mapping is named by its address; a record too short for its pcs is refused. */
static void test_unmapped_pc_and_short_record(void **state)
{
	struct fixture *fixture = *state;
	static struct record_buffer buffer;
	char *heap = malloc(32);
	uint64_t pcs[1] = { (uint64_t)(uintptr_t)heap };
	struct pf_sample sample;
	char expected[32];

	build_record(&buffer, 0, NULL, pcs, 1, UNWIND_STOP_NO_MAPPING);
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size, &fixture->python,
					       &sample), 0);
	assert_int_equal(sample.frame_count, 1);
	snprintf(expected, sizeof(expected), "0x%" PRIx64, pcs[0]);
	assert_string_equal(sample.frames[0].name, expected);
	assert_int_equal(sample.frames[0].kind, PF_FRAME_NATIVE);
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size - 1,
					       &fixture->python, &sample), -EINVAL);
	free(heap);
}

/* A cpu-clock sample ran; a wall-mode record of a thread that was not runnable is idle, without
 * CPython's ON_CPU bit. Both keep the main-thread bit. */
static void test_off_cpu_record_is_idle(void **state)
{
	struct fixture *fixture = *state;
	static struct record_buffer buffer;
	struct pf_sample sample;

	build_record(&buffer, 0, NULL, NULL, 0, UNWIND_STOP_NOT_WALKED);
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size, &fixture->python,
					       &sample), 0);
	assert_int_equal(sample.status, PF_STATUS_ON_CPU | PF_STATUS_MAIN_THREAD);
	buffer.record.flags = PBP_REC_OFF_CPU;
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size, &fixture->python,
					       &sample), 0);
	assert_int_equal(sample.status, PF_STATUS_IDLE | PF_STATUS_MAIN_THREAD);
	assert_int_equal(sample.status & PF_STATUS_TACHYON_MASK, PF_STATUS_MAIN_THREAD);
	/* The GIL's holder, collecting garbage (BPF flags GC for the holder only). */
	buffer.record.flags = PBP_REC_HAS_GIL | PBP_REC_GC;
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size, &fixture->python,
					       &sample), 0);
	assert_int_equal(sample.status, PF_STATUS_ON_CPU | PF_STATUS_MAIN_THREAD | PF_STATUS_HAS_GIL | PF_STATUS_GC);
	buffer.record.flags = PBP_REC_GIL_REQUESTED;
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size, &fixture->python,
					       &sample), 0);
	assert_int_equal(sample.status, PF_STATUS_ON_CPU | PF_STATUS_MAIN_THREAD | PF_STATUS_GIL_REQUESTED);
}

/* ---- activations by the evaluation function's address (before 3.12) ---- */

/* The evaluation function and the thread's bootstrap, in the main executable (the interpreter's
 * file here); neither is named like CPython's. */
INTERPRETER_FUNCTION(evaluation_loop)
INTERPRETER_FUNCTION(interpreter_bootstrap)

static uint64_t returning_into(void (*function)(void))
{
	return (uint64_t)(uintptr_t)function + 4; /* a return address: its pc - 1 is in the function */
}

/* A 3.8 sample: deflate called from a Python frame, whose activation crc32 ran from another. */
static void build_two_activations(struct record_buffer *buffer)
{
	const bool entry[2] = { true, true };
	const uint64_t pcs[5] = {
		(uint64_t)(uintptr_t)deflate + 16, returning_into(evaluation_loop),
		(uint64_t)(uintptr_t)crc32 + 16 + 1, returning_into(evaluation_loop),
		returning_into(interpreter_bootstrap),
	};

	build_record(buffer, 2, entry, pcs, 5, UNWIND_STOP_ROOT);
}

/* Root first: the kinds of the frames ("INVALID;py;libz;py;libz"), native frames by their file. */
static void render_kinds(const struct pf_sample *sample, char *out, size_t len)
{
	size_t used = 0;

	out[0] = 0;
	for (size_t i = 0; i < sample->frame_count; i++) {
		const struct pf_frame *frame = &sample->frames[i];
		const char *kind = frame->kind == PF_FRAME_PYTHON	? "py"
				   : frame->kind == PF_FRAME_INVALID ? "INVALID"
				   : strstr(frame->file, "/libz.so") ? "libz"
								       : frame->name;

		used += (size_t)snprintf(out + used, len - used, "%s%s", used ? ";" : "", kind);
	}
}

/*
 * Up to 3.11 the merge finds activations by role: a pc in the evaluation function's range (found
 * at discovery) is one, whatever the file's symbols say, read or not yet (the resolver waits
 * for none: the names are the offsets' while the worker reads them). Without a range, the name
 * alone decides; a range that covers what it should not is a disagreement, counted.
 */
static void test_activations_by_eval_address(void **state)
{
	struct fixture *fixture = *state;
	static struct record_buffer buffer;
	struct pf_sample sample;
	char text[512];

	symbolize_native_set_wait_ms(fixture->resolver.native, 0);
	fixture->python.minor = 8;
	fixture->python.eval_start = (uint64_t)(uintptr_t)evaluation_loop;
	fixture->python.eval_end = fixture->python.eval_start + 16;
	build_two_activations(&buffer);
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size, &fixture->python,
					       &sample), 0);
	render_kinds(&sample, text, sizeof(text));
	assert_string_equal(text, "INVALID;py;libz;py;libz");
	assert_int_equal(fixture->resolver.merge_failures, 0);
	/* named or not, evaluation_loop is no activation by its name (the roles kept for named
	 * pcs are forgotten first: the symbols may have come meanwhile) */
	sample_resolve_forget_native(&fixture->resolver);
	fixture->python.eval_start = fixture->python.eval_end = 0;
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size, &fixture->python,
					       &sample), 0);
	assert_int_equal(fixture->resolver.merge_failures, 1);
	/* a range over every address: more activations than Python frames */
	sample_resolve_forget_native(&fixture->resolver);
	fixture->python.eval_start = 0;
	fixture->python.eval_end = UINT64_MAX;
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size, &fixture->python,
					       &sample), 0);
	assert_int_equal(fixture->resolver.merge_failures, 2);
}

/*
 * A process is sampled before discovery knows it runs Python (its runtime not initialised yet,
 * a busy host's discovery retried): its records carry native frames only, resolved without an
 * interpreter, all foreign. Once it is known, the same pcs have their interpreter roles: the
 * roles remembered for a pc are those given with or without an interpreter, not both.
 */
static void test_roles_once_python_is_known(void **state)
{
	struct fixture *fixture = *state;
	static struct record_buffer buffer;
	const uint64_t pcs[5] = {
		(uint64_t)(uintptr_t)deflate + 16, returning_into(evaluation_loop),
		(uint64_t)(uintptr_t)crc32 + 16 + 1, returning_into(evaluation_loop),
		returning_into(interpreter_bootstrap),
	};
	struct pf_sample sample;
	char text[512];

	fixture->python.minor = 8;
	fixture->python.eval_start = (uint64_t)(uintptr_t)evaluation_loop;
	fixture->python.eval_end = fixture->python.eval_start + 16;
	build_record(&buffer, 0, NULL, pcs, 5, UNWIND_STOP_ROOT);
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size, NULL, &sample), 0);
	assert_int_equal(sample.frame_count, 5);
	build_two_activations(&buffer);
	assert_int_equal(sample_resolve_record(&fixture->resolver, &buffer.record, buffer.size, &fixture->python,
					       &sample), 0);
	render_kinds(&sample, text, sizeof(text));
	assert_string_equal(text, "INVALID;py;libz;py;libz");
	assert_int_equal(fixture->resolver.merge_failures, 0);
}

/* ---- kernel frames: named by a namer, a record's new addresses in one batch ---- */

#define UNNAMED_KERNEL_ADDRESS 0xffffffff8dead000ull

struct fake_namer {
	size_t calls, addresses_asked;
	int fail;
};

/* Names every kernel address "k_<hex>" but one, as the kernel's lookup would name its symbols. */
static int name_like_the_kernel(void *context, const uint64_t *addresses, size_t count,
				void (*found)(void *found_context, uint64_t address, const char *name),
				void *found_context)
{
	struct fake_namer *namer = context;
	char name[32];

	namer->calls++;
	namer->addresses_asked += count;
	if (namer->fail)
		return -EIO;
	for (size_t i = 0; i < count; i++) {
		if (addresses[i] == UNNAMED_KERNEL_ADDRESS)
			continue;
		snprintf(name, sizeof(name), "k_%" PRIx64, addresses[i] & 0xffff);
		found(found_context, addresses[i], name);
	}
	return 0;
}

/* A kernel-mode record of this process with these kernel addresses, leaf first, and nothing else. */
static void build_kernel_record(struct record_buffer *buffer, const uint64_t *ips, size_t count)
{
	memset(buffer, 0, sizeof(*buffer));
	buffer->record.pid = (uint32_t)getpid();
	buffer->record.tid = (uint32_t)getpid();
	buffer->record.kernel_frame_count = (uint16_t)count;
	memcpy(buffer->bytes + sizeof(struct pbp_record), ips, count * sizeof(*ips));
	buffer->size = sizeof(struct pbp_record) + count * sizeof(*ips);
}

/* Resolves a record of these kernel addresses; its frames must read `expected`, root first. */
static void expect_kernel_stack(struct sample_resolver *resolver, const uint64_t *ips, size_t count,
				const char *expected)
{
	static struct record_buffer buffer;
	struct pf_sample sample;
	char text[512];

	build_kernel_record(&buffer, ips, count);
	assert_int_equal(sample_resolve_record(resolver, &buffer.record, buffer.size, NULL, &sample), 0);
	render(&sample, text, sizeof(text));
	assert_string_equal(text, expected);
}

static void test_kernel_addresses_named_once_a_record_at_a_time(void **state)
{
	struct sample_resolver resolver;
	struct fake_namer namer = { 0 };
	const uint64_t first[4] = { 0xffffffff81000010ull, 0xffffffff81000020ull, UNNAMED_KERNEL_ADDRESS,
				    0xffffffff81000030ull };
	const uint64_t second[3] = { 0xffffffff81000010ull, 0xffffffff81000040ull, 0xffffffff81000030ull };

	(void)state;
	assert_int_equal(sample_resolve_init(&resolver, name_like_the_kernel, &namer, 1000), 0);
	/* Root first; the address with no symbol by its value. */
	expect_kernel_stack(&resolver, first, 4, "k_30;0xffffffff8dead000;k_20;k_10");
	assert_int_equal(namer.calls, 1);
	assert_int_equal(namer.addresses_asked, 4);
	/* Only the address not seen before is asked for. */
	expect_kernel_stack(&resolver, second, 3, "k_30;k_40;k_10");
	assert_int_equal(namer.calls, 2);
	assert_int_equal(namer.addresses_asked, 5);
	/* Nothing new: the kernel is not asked. */
	expect_kernel_stack(&resolver, first, 4, "k_30;0xffffffff8dead000;k_20;k_10");
	assert_int_equal(namer.calls, 2);
	assert_int_equal(resolver.kernel_namer_errors, 0);
	sample_resolve_free(&resolver);
}

static void test_kernel_addresses_by_value_when_the_kernel_cannot_say(void **state)
{
	struct sample_resolver resolver;
	struct fake_namer namer = { .fail = 1 };
	const uint64_t ips[2] = { 0xffffffff81000010ull, 0xffffffff81000020ull };

	(void)state;
	assert_int_equal(sample_resolve_init(&resolver, name_like_the_kernel, &namer, 1000), 0);
	expect_kernel_stack(&resolver, ips, 2, "0xffffffff81000020;0xffffffff81000010");
	assert_int_equal(resolver.kernel_namer_errors, 1);
	sample_resolve_free(&resolver);
	/* No namer at all (--no-kernel names nothing; a kernel without the lookup): the same. */
	assert_int_equal(sample_resolve_init(&resolver, NULL, NULL, 1000), 0);
	expect_kernel_stack(&resolver, ips, 2, "0xffffffff81000020;0xffffffff81000010");
	sample_resolve_free(&resolver);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unmapped_pc_and_short_record, native_resolver_setup, native_resolver_teardown),
		cmocka_unit_test_setup_teardown(test_off_cpu_record_is_idle, native_resolver_setup, native_resolver_teardown),
		cmocka_unit_test_setup_teardown(test_activations_by_eval_address, native_resolver_setup,
						native_resolver_teardown),
		cmocka_unit_test_setup_teardown(test_roles_once_python_is_known, native_resolver_setup,
						native_resolver_teardown),
		cmocka_unit_test(test_kernel_addresses_named_once_a_record_at_a_time),
		cmocka_unit_test(test_kernel_addresses_by_value_when_the_kernel_cannot_say),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
