// SPDX-License-Identifier: MIT
/* util/: growth, the hash index (insert, find, remove with backward shift), paces, error buffers,
 * text made safe for a terminal. */
#include "testlib.h"

#include "util/array.h"
#include "util/errbuf.h"
#include "util/hash.h"
#include "util/intern.h"
#include "util/pace.h"
#include "util/text_quote.h"

#include <errno.h>
#include <stddef.h>

static void array_grows_by_doubling_and_keeps_items(void **state)
{
	int *items = NULL;
	size_t capacity = 0;

	(void)state;
	assert_int_equal(ARRAY_RESERVE(items, capacity, 1), 0);
	assert_int_equal(capacity, 16);
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(ARRAY_RESERVE(items, capacity, (size_t)i + 1), 0);
		items[i] = i;
	}
	assert_int_equal(capacity, 1024);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(items[i], i);
	free(items);
}

static void array_refuses_sizes_that_overflow(void **state)
{
	char *items = NULL;
	size_t capacity = 0;
	void *raw = NULL;
	size_t raw_capacity = 0;

	(void)state;
	assert_int_equal(ARRAY_RESERVE(items, capacity, SIZE_MAX), -ENOMEM);
	assert_null(items);
	assert_int_equal(capacity, 0);
	assert_int_equal(array_reserve(&raw, &raw_capacity, SIZE_MAX / 8, 64, 16), -ENOMEM);
	assert_null(raw);
}

struct keyed {
	uint32_t tag;
	uint64_t addr;
};

/* The last element at or below a value: equal keys, gaps, below the first, past the last. */
static void array_finds_the_last_at_or_below(void **state)
{
	static const struct keyed items[] = { { 1, 10 }, { 2, 20 }, { 3, 20 }, { 4, 35 } };
	const size_t size = sizeof(items[0]), key = offsetof(struct keyed, addr);
	const struct keyed *found;

	(void)state;
	assert_null(array_last_at_or_below_u64(items, 4, size, key, 9));
	assert_null(array_last_at_or_below_u64(items, 0, size, key, 100));
	found = array_last_at_or_below_u64(items, 4, size, key, 10);
	assert_int_equal(found->tag, 1);
	found = array_last_at_or_below_u64(items, 4, size, key, 19);
	assert_int_equal(found->tag, 1);
	found = array_last_at_or_below_u64(items, 4, size, key, 20);
	assert_int_equal(found->tag, 3);
	found = array_last_at_or_below_u64(items, 4, size, key, 34);
	assert_int_equal(found->tag, 3);
	found = array_last_at_or_below_u64(items, 4, size, key, UINT64_MAX);
	assert_int_equal(found->tag, 4);
}

struct pair_list {
	uint64_t keys[4096];
	size_t count;
};

static bool key_at_matches(const void *context, uint32_t position, const void *key)
{
	const struct pair_list *list = context;

	return list->keys[position] == *(const uint64_t *)key;
}

/* Keys that all land in a few slots exercise probing and the backward shift. */
static uint64_t crowded_hash(uint64_t key)
{
	return key % 7;
}

static void hash_index_finds_what_it_holds_after_removals(void **state)
{
	static struct pair_list list;
	struct hash_index index;

	(void)state;
	hash_index_init(&index);
	list.count = 0;
	for (uint64_t key = 1000; key < 1000 + 3000; key++) {
		list.keys[list.count] = key;
		assert_int_equal(hash_index_insert(&index, crowded_hash(key) | (key << 20), (uint32_t)list.count), 0);
		list.count++;
	}
	/* remove every third key */
	for (size_t i = 0; i < list.count; i += 3)
		hash_index_remove(&index, crowded_hash(list.keys[i]) | (list.keys[i] << 20), (uint32_t)i);
	for (size_t i = 0; i < list.count; i++) {
		uint64_t key = list.keys[i];
		int64_t found = hash_index_find(&index, crowded_hash(key) | (key << 20), key_at_matches, &list, &key);

		if (i % 3 == 0)
			assert_int_equal(found, -1);
		else
			assert_int_equal(found, (int64_t)i);
	}
	assert_int_equal(index.count, 2000);
	hash_index_clear(&index);
	assert_int_equal(index.count, 0);
	hash_index_free(&index);
}

/* Equal hashes (a real collision) are told apart by the caller's match. */
static void hash_index_tells_colliding_keys_apart(void **state)
{
	static struct pair_list list = { .keys = { 11, 22, 33 }, .count = 3 };
	struct hash_index index;
	uint64_t probe;

	(void)state;
	hash_index_init(&index);
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(hash_index_insert(&index, 42, i), 0);
	for (uint32_t i = 0; i < 3; i++) {
		probe = list.keys[i];
		assert_int_equal(hash_index_find(&index, 42, key_at_matches, &list, &probe), i);
	}
	probe = 44;
	assert_int_equal(hash_index_find(&index, 42, key_at_matches, &list, &probe), -1);
	hash_index_remove(&index, 42, 1);
	probe = 33;
	assert_int_equal(hash_index_find(&index, 42, key_at_matches, &list, &probe), 2);
	hash_index_free(&index);
}

static void hashes_mix_every_bit(void **state)
{
	(void)state;
	assert_int_not_equal(hash_mix64(1), hash_mix64(2));
	assert_int_not_equal(hash_bytes("ab", 2), hash_bytes("ba", 2));
	assert_int_not_equal(hash_combine(1, 2), hash_combine(2, 1));
	assert_int_equal(hash_bytes("same", 4), hash_bytes("same", 4));
}

static void errbuf_returns_the_error_it_describes(void **state)
{
	struct errbuf buf;
	char small[8];

	(void)state;
	assert_int_equal(errbuf_set(&buf, -EINVAL, "bad %s at %d", "thing", 7), -EINVAL);
	assert_string_equal(buf.text, "bad thing at 7");
	assert_int_equal(errbuf_format(small, sizeof(small), -EIO, "%s", "truncated text"), -EIO);
	assert_string_equal(small, "truncat");
	errbuf_clear(&buf);
	assert_string_equal(buf.text, "");
}

/* Control bytes (C0, DEL, C1) and broken UTF-8 show as escapes; printable UTF-8 stays. */
static void text_escaped_defuses_terminal_controls(void **state)
{
	char out[128], *quoted = NULL;
	size_t quoted_len = 0;
	FILE *stream;

	(void)state;
	assert_string_equal(text_escaped(out, sizeof(out), "a\x1b[2J\rb\x7f"), "a\\x1b[2J\\rb\\x7f");
	assert_string_equal(text_escaped(out, sizeof(out), "csi\xc2\x9bm \xe2\x82\xac \xc3\xa9"),
			    "csi\\xc2\\x9bm \xe2\x82\xac \xc3\xa9");
	assert_string_equal(text_escaped(out, sizeof(out), "bad\x9b\xff\xe2\x82"),
			    "bad\\x9b\\xff\\xe2\\x82");
	assert_string_equal(text_escaped(out, sizeof(out), "path\\with \"quotes\""),
			    "path\\with \"quotes\"");
	/* Bidirectional overrides, isolates and marks would reorder what the reader sees. */
	assert_string_equal(text_escaped(out, sizeof(out),
					 "a\xe2\x80\xae" "b\xe2\x81\xa6" "c\xe2\x81\xa9\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c"),
			    "a\\u202eb\\u2066c\\u2069\\u200e\\u200f\\u061c");
	assert_string_equal(text_escaped(out, sizeof(out), "\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad \xe2\x80\x90"),
			    "\\u202a\\u202b\\u202c\\u202d \xe2\x80\x90");
	/* Cut at a whole escape, never inside one. */
	assert_string_equal(text_escaped(out, 6, "ab\x1b"), "ab");
	stream = open_memstream(&quoted, &quoted_len);
	assert_non_null(stream);
	fput_quoted_cstr(stream, "q\"\\\n\xc2\x85");
	fclose(stream);
	assert_string_equal(quoted, "\"q\\\"\\\\\\n\\xc2\\x85\"");
	free(quoted);
	stream = open_memstream(&quoted, &quoted_len);
	assert_non_null(stream);
	fput_quoted_cstr(stream, "main\xe2\x80\xae.py");
	fclose(stream);
	assert_string_equal(quoted, "\"main\\u202e.py\"");
	free(quoted);
}

/* Target names reach JSON files: whatever their bytes, a strict parser must accept the result. */
static void json_strings_are_always_valid(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	(void)state;
	assert_non_null(out);
	fput_json_string(out, "q\"b\\ \x01\n\x7f \xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x8d");
	fputc(' ', out);
	/* a lone continuation, an overlong '/', a surrogate, past U+10FFFF, a cut sequence */
	fput_json_string(out, "\x80 \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xe2\x82");
	fclose(out);
	assert_string_equal(text, "\"q\\\"b\\\\ \\u0001\\u000a\\u007f \xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x8d\" "
				  "\"\\ufffd \\ufffd\\ufffd \\ufffd\\ufffd\\ufffd \\ufffd\\ufffd\\ufffd\\ufffd \\ufffd\\ufffd\"");
	free(text);
}

/* A burst spent at once is refilled one event per interval, not only when a second turns. */
static void pace_refills_steadily_after_a_burst(void **state)
{
	struct pace pace = { 0 };
	uint64_t now_ms = 1000000;
	int taken = 0;

	(void)state;
	for (int i = 0; i < 20; i++)
		taken += pace_take(&pace, now_ms, 5, 200);
	assert_int_equal(taken, 5);
	/* the next one comes an interval after the burst, and no sooner */
	assert_false(pace_take(&pace, now_ms + 199, 5, 200));
	assert_true(pace_take(&pace, now_ms + 200, 5, 200));
	assert_false(pace_take(&pace, now_ms + 201, 5, 200));
	/* over a long run the average holds: 5 a second after the first burst */
	taken = 0;
	for (uint64_t t = now_ms + 201; t < now_ms + 10201; t++)
		taken += pace_take(&pace, t, 5, 200);
	assert_int_equal(taken, 50);
	/* idle long, a burst is saved again, and no more than a burst */
	taken = 0;
	for (int i = 0; i < 20; i++)
		taken += pace_take(&pace, now_ms + 60000, 5, 200);
	assert_int_equal(taken, 5);
}

/* A writer keeps tables per process, and a whole host has hundreds of processes with a few keys
 * each: what a table holds (its storage counted, as the budget charges it) follows its keys. */
static void intern_holds_what_its_keys_need(void **state)
{
	struct intern_table small, large;
	static char big[100 * 1024];
	uint64_t tid = 4242;
	char key[32];

	(void)state;
	intern_init(&small);
	assert_int_equal(intern_add(&small, &tid, sizeof(tid), NULL), 0);
	/* its key, the hash slots' minimum and the id index: not a 64 KiB chunk */
	assert_true(intern_held_bytes(&small) <= 4096);
	intern_free(&small);

	/* many keys across many chunks, one larger than any chunk: each kept, found and in place */
	intern_init(&large);
	memset(big, 'x', sizeof(big));
	for (int i = 0; i < 20000; i++) {
		int len = snprintf(key, sizeof(key), "key-%d-%.*s", i, i % 13, "abcdefghijklm");

		assert_int_equal(intern_add(&large, key, (size_t)len, NULL), i);
	}
	assert_int_equal(intern_add(&large, big, sizeof(big), NULL), 20000);
	assert_int_equal(intern_add(&large, "after", 5, NULL), 20001);
	assert_int_equal(intern_find(&large, big, sizeof(big)), 20000);
	assert_string_equal(intern_key(&large, 20001, NULL), "after");
	for (int i = 0; i < 20000; i++) {
		int len = snprintf(key, sizeof(key), "key-%d-%.*s", i, i % 13, "abcdefghijklm");
		size_t stored_len;
		const char *stored = intern_key(&large, (uint32_t)i, &stored_len);

		assert_int_equal(stored_len, (size_t)len);
		assert_memory_equal(stored, key, (size_t)len);
		assert_int_equal(stored[len], 0);
		assert_int_equal(intern_find(&large, key, (size_t)len), i);
	}
	/* the storage stays within twice the keys' bytes (each with its NUL) and one last chunk */
	assert_true(large.chunk_bytes <= 2 * (large.bytes + intern_count(&large)) + 64 * 1024);
	intern_free(&large);
}

/* A budget charges a new key before it is added: what intern_add_growth says is exactly what
 * the table then holds more, through every doubling and new chunk, a key past a chunk too. */
static void intern_growth_is_known_before_the_add(void **state)
{
	static char big[70 * 1024];
	struct intern_table table;
	char key[48];

	(void)state;
	intern_init(&table);
	memset(big, 'y', sizeof(big));
	for (int i = 0; i < 5000; i++) {
		int len = i == 2500 ? (int)sizeof(big)
				    : snprintf(key, sizeof(key), "name-%d-%.*s", i, i % 29, "abcdefghijklmnopqrstuvwxyz012");
		const char *added = i == 2500 ? big : key;
		size_t before = intern_held_bytes(&table), growth = intern_add_growth(&table, (size_t)len);

		assert_int_equal(intern_add(&table, added, (size_t)len, NULL), i);
		assert_int_equal(intern_held_bytes(&table) - before, growth);
	}
	/* a key already there adds nothing */
	assert_int_equal(intern_add(&table, "name-7-abcdefg", 14, NULL), 7);
	intern_free(&table);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(array_grows_by_doubling_and_keeps_items),
		cmocka_unit_test(text_escaped_defuses_terminal_controls),
		cmocka_unit_test(json_strings_are_always_valid),
		cmocka_unit_test(array_refuses_sizes_that_overflow),
		cmocka_unit_test(array_finds_the_last_at_or_below),
		cmocka_unit_test(hash_index_finds_what_it_holds_after_removals),
		cmocka_unit_test(hash_index_tells_colliding_keys_apart),
		cmocka_unit_test(hashes_mix_every_bit),
		cmocka_unit_test(intern_holds_what_its_keys_need),
		cmocka_unit_test(intern_growth_is_known_before_the_add),
		cmocka_unit_test(pace_refills_steadily_after_a_burst),
		cmocka_unit_test(errbuf_returns_the_error_it_describes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
