// SPDX-License-Identifier: MIT
/*
 * The running task's name as BPF copies it at the sample (include/sample_record.h, struct
 * pbp_task_name), decoded by symbolize/async_tasks.c: a str's header and text, the int of a
 * lazy "Task-n", and what a hostile target can put there (an absurd length, a text without
 * room, a type that cannot be read) never names a task after bytes the copy does not hold.
 * The name's type is read from this process's memory, as from a target's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sample_record.h"
#include "python/py_discover.h"
#include "python/py_offsets.h"
#include "symbolize/async_tasks.h"

#define TPFLAGS_LONG_SUBCLASS (1ull << 24)
#define TPFLAGS_UNICODE_SUBCLASS (1ull << 28)

struct fixture {
	struct py_target target;
	struct async_tasks *tasks;
	uint8_t str_type[512], int_type[512];
};

/* A target of version 3.minor: this process, with that version's layouts. */
static struct fixture *fixture_for(unsigned minor)
{
	struct fixture *fixture = calloc(1, sizeof(*fixture));
	uint64_t flags;

	assert_non_null(fixture);
	fixture->target.pid = getpid();
	fixture->target.major = 3;
	fixture->target.minor = minor;
	fixture->target.config.off = *py_offsets_for_version(3, minor);
	assert_int_equal(py_asyncio_layout_for_version(3, minor, &fixture->target.asyncio), 0);
	assert_true(fixture->target.asyncio.tp_flags + sizeof(flags) <= sizeof(fixture->str_type));
	flags = TPFLAGS_UNICODE_SUBCLASS;
	memcpy(fixture->str_type + fixture->target.asyncio.tp_flags, &flags, sizeof(flags));
	flags = TPFLAGS_LONG_SUBCLASS;
	memcpy(fixture->int_type + fixture->target.asyncio.tp_flags, &flags, sizeof(flags));
	fixture->tasks = async_tasks_new();
	assert_non_null(fixture->tasks);
	return fixture;
}

static void fixture_free(struct fixture *fixture)
{
	async_tasks_free(fixture->tasks);
	free(fixture);
}

static void put_u64(struct pbp_task_name *copy, uint32_t offset, uint64_t value)
{
	assert_true(offset + sizeof(value) <= sizeof(copy->bytes));
	memcpy(copy->bytes + offset, &value, sizeof(value));
}

/* A copy of a compact ASCII str claiming length chars, text (up to the copy's end) after its header. */
static struct pbp_task_name str_copy(const struct fixture *fixture, const char *text, int64_t length)
{
	const struct py_offsets *off = &fixture->target.config.off;
	struct pbp_task_name copy = { .name_addr = 0x1000, .copied = PBP_TASK_NAME_BYTES };
	uint32_t state = PY_UNICODE_ASCII_BIT | PY_UNICODE_COMPACT_BIT | (1u << 2); /* kind 1 */
	size_t room = sizeof(copy.bytes) - off->unicode_ascii_data;

	put_u64(&copy, fixture->target.asyncio.ob_type, (uint64_t)(uintptr_t)fixture->str_type);
	memcpy(copy.bytes + off->unicode_length, &length, sizeof(length));
	memcpy(copy.bytes + off->unicode_state, &state, sizeof(state));
	memcpy(copy.bytes + off->unicode_ascii_data, text, strlen(text) < room ? strlen(text) : room);
	return copy;
}

static void str_names(void **state)
{
	struct fixture *fixture = fixture_for(12);
	struct pbp_task_name copy = str_copy(fixture, "request-42", 10);

	(void)state;
	assert_string_equal(async_tasks_copied_name(fixture->tasks, &fixture->target, &copy), "<task request-42>");
	/* a copy that ends inside the header holds no name */
	copy.copied = fixture->target.config.off.unicode_length;
	assert_null(async_tasks_copied_name(fixture->tasks, &fixture->target, &copy));
	/* nor does a task without a name object */
	copy = str_copy(fixture, "request-42", 10);
	copy.name_addr = 0;
	assert_null(async_tasks_copied_name(fixture->tasks, &fixture->target, &copy));
	fixture_free(fixture);
}

/* A name longer than the copy (or a length field claiming 2**40 chars) is cut where the copy ends, marked. */
static void long_names_are_cut(void **state)
{
	struct fixture *fixture = fixture_for(12);
	char text[PBP_TASK_NAME_BYTES + 1];
	struct pbp_task_name copy;
	const char *name;

	(void)state;
	memset(text, 'x', PBP_TASK_NAME_BYTES);
	text[PBP_TASK_NAME_BYTES] = 0;
	copy = str_copy(fixture, text, (int64_t)1 << 40);
	name = async_tasks_copied_name(fixture->tasks, &fixture->target, &copy);
	assert_non_null(name);
	assert_true(strncmp(name, "<task xxxx", 10) == 0);
	assert_true(strlen(name) < 64);
	assert_string_equal(name + strlen(name) - 4, "...>");
	/* a negative length, or a str that is not compact ASCII: no name */
	copy = str_copy(fixture, "abc", -1);
	assert_null(async_tasks_copied_name(fixture->tasks, &fixture->target, &copy));
	copy = str_copy(fixture, "abc", 3);
	memset(copy.bytes + fixture->target.config.off.unicode_state, 0, 4);
	assert_null(async_tasks_copied_name(fixture->tasks, &fixture->target, &copy));
	/* a text holding a NUL is no name */
	copy = str_copy(fixture, "ab", 5);
	assert_null(async_tasks_copied_name(fixture->tasks, &fixture->target, &copy));
	fixture_free(fixture);
}

/* 3.12+ name a task "Task-n" lazily: the copy holds the int n (30-bit digits, counted in lv_tag). */
static void lazy_task_numbers(void **state)
{
	struct fixture *fixture = fixture_for(12);
	const struct py_asyncio_layout *layout = &fixture->target.asyncio;
	struct pbp_task_name copy = { .name_addr = 0x1000, .copied = PBP_TASK_NAME_BYTES };
	uint64_t big = (uint64_t)5 | (uint64_t)1 << 32; /* digits 5, 1: 5 + 2**30 */

	(void)state;
	put_u64(&copy, layout->ob_type, (uint64_t)(uintptr_t)fixture->int_type);
	put_u64(&copy, layout->long_lv_tag, 1u << 3);
	put_u64(&copy, layout->long_ob_digit, 7 | (uint64_t)9 << 32);
	assert_string_equal(async_tasks_copied_name(fixture->tasks, &fixture->target, &copy), "<task Task-7>");
	put_u64(&copy, layout->long_lv_tag, 2u << 3);
	put_u64(&copy, layout->long_ob_digit, big);
	assert_string_equal(async_tasks_copied_name(fixture->tasks, &fixture->target, &copy), "<task Task-1073741829>");
	/* more digits than a task's number has: no name */
	put_u64(&copy, layout->long_lv_tag, 3u << 3);
	assert_null(async_tasks_copied_name(fixture->tasks, &fixture->target, &copy));
	fixture_free(fixture);
}

/* A type that cannot be read, or is neither str nor int: no name. */
static void unreadable_types(void **state)
{
	struct fixture *fixture = fixture_for(12);
	struct pbp_task_name copy = str_copy(fixture, "request-1", 9);
	uint8_t other_type[512] = { 0 };

	(void)state;
	put_u64(&copy, fixture->target.asyncio.ob_type, 8); /* unmapped */
	assert_null(async_tasks_copied_name(fixture->tasks, &fixture->target, &copy));
	put_u64(&copy, fixture->target.asyncio.ob_type, (uint64_t)(uintptr_t)other_type);
	assert_null(async_tasks_copied_name(fixture->tasks, &fixture->target, &copy));
	put_u64(&copy, fixture->target.asyncio.ob_type, 0);
	assert_null(async_tasks_copied_name(fixture->tasks, &fixture->target, &copy));
	fixture_free(fixture);
}

/* A task known by its name alone: one frame, kept per (name, coroutine code). */
static void named_chains(void **state)
{
	struct fixture *fixture = fixture_for(11);
	struct pbp_task_name copy = str_copy(fixture, "alpha-1", 7);
	const char *name = async_tasks_copied_name(fixture->tasks, &fixture->target, &copy);
	const struct async_chain *chain = NULL;
	uint64_t first_id;

	(void)state;
	assert_non_null(name);
	assert_int_equal(async_tasks_named_chain(fixture->tasks, name, 0x5000, &chain), 0);
	assert_int_equal(chain->frame_count, 1);
	assert_string_equal(chain->frames[0].name, "<task alpha-1>");
	assert_string_equal(chain->frames[0].file, ASYNC_TASKS_FRAME_FILE);
	assert_int_equal(chain->coro_code, 0x5000);
	first_id = chain->chain_id;
	assert_int_equal(async_tasks_named_chain(fixture->tasks, name, 0x5000, &chain), 0);
	assert_int_equal(chain->chain_id, first_id);
	assert_int_equal(async_tasks_named_chain(fixture->tasks, name, 0x6000, &chain), 0);
	assert_int_not_equal(chain->chain_id, first_id);
	assert_int_equal(async_tasks_named_chain(fixture->tasks, async_tasks_unknown_name(fixture->tasks), 0x5000,
						 &chain), 0);
	assert_string_equal(chain->frames[0].name, "<task ?>");
	fixture_free(fixture);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(str_names),
		cmocka_unit_test(long_names_are_cut),
		cmocka_unit_test(lazy_task_numbers),
		cmocka_unit_test(unreadable_types),
		cmocka_unit_test(named_chains),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
