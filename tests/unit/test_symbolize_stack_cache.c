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
#include "resolve_pipeline.h"

#include <inttypes.h>

#include <unistd.h>
#include <zlib.h>

#include "fake_python.h"
#include "formats/format_registry.h"
#include "formats/known_stacks.h"
#include "profile/profile.h"
#include "symbolize/sample_resolve.h"
#include "symbolize/symbolize_native.h"
#include "symbolize/symbolize_py.h"
#include "util/memo_cache.h"
#include "util/target_budget.h"

/* Interpreter functions, as the test executable's symbols (the main executable is the interpreter's). */
INTERPRETER_FUNCTION(Py_BytesMain)
INTERPRETER_FUNCTION(_PyEval_EvalFrameDefault)

#define FAKE_CODES 900

/* The n-th record of a scripted run: stacks of depth 30 and 900 (and one sharing their root),
 * kernel frames, truncated stacks, three threads, the garbage collector, sleeping. */
static void scripted_record(const struct fake_python *fake, struct fake_record *buffer, size_t n)
{
	static size_t codes[FAKE_CODES], shifted[40];
	static const uint64_t kernel_ips[] = { 0xffffffff81000100ull, 0xffffffff81000200ull };
	size_t variant = n % 7;

	for (size_t i = 0; i < FAKE_CODES; i++)
		codes[i] = i;
	for (size_t i = 0; i < 40; i++)
		shifted[i] = 100 + i;
	switch (variant) {
	case 0: case 3:
		fake_python_record(fake, buffer, codes, 30, (uint32_t)(n % 3) * 2, NULL, 0);
		break;
	case 1:
		fake_python_record(fake, buffer, codes, 900, (uint32_t)(n % 2) * 2, NULL, 0);
		break;
	case 2:
		fake_python_record(fake, buffer, shifted, 40, 0, kernel_ips, 2);
		break;
	case 4:
		fake_python_record(fake, buffer, codes, 30, 0, NULL, 0);
		buffer->record.flags |= PBP_REC_PY_TRUNCATED;
		break;
	case 5:
		fake_python_record(fake, buffer, codes + 2, 12, 0, kernel_ips + 1, 1);
		buffer->record.flags |= PBP_REC_GC;
		break;
	default:
		fake_python_record(fake, buffer, codes, 900, 0, kernel_ips, 2);
		buffer->record.flags |= PBP_REC_OFF_CPU;
		break;
	}
	buffer->record.tid = buffer->record.pid + (uint32_t)(n % 3);
	buffer->record.time_ns = 1000000000ull + n * 1000000ull;
}

/* Renames a fake code object's function in place: the same str object (so the same checksum) with new text. */
static void rename_function(struct fake_python *fake, size_t index, const char *text)
{
	const struct py_offsets *off = &fake->python.config.off;
	int64_t length;

	memcpy(&length, fake->names[index] + off->unicode_length, sizeof(length));
	assert_int_equal((size_t)length, strlen(text));
	memcpy(fake->names[index] + off->unicode_ascii_data, text, strlen(text));
}

/*
 * The scripted run through both pipelines: each sample the same, the files the same. A function
 * renamed in place has a new identity (its name's text is part of it: py_string_identity), so it
 * shows under its new name at once, kept stacks or not; forgetting the process drops every kept
 * stack, and each is resolved again.
 */
static void test_kept_stacks_write_the_same_files(void **state)
{
	static struct pipeline keeping, fresh;
	static struct fake_record buffer;
	struct fake_python fake;
	struct pf_sample kept_sample, fresh_sample;

	(void)state;
	fake_python_init(&fake, FAKE_CODES);
	pipeline_open(&keeping, "keeping", true, false);
	pipeline_open(&fresh, "fresh", false, false);
	for (size_t n = 0; n < 300; n++) {
		if (n == 100)
			rename_function(&fake, 3, "renamed_3!");
		if (n == 200) {
			symbolize_py_forget_pid(keeping.resolver.python, fake.python.pid);
			symbolize_py_forget_pid(fresh.resolver.python, fake.python.pid);
		}
		scripted_record(&fake, &buffer, n);
		pipeline_feed(&keeping, &fake, &buffer, &kept_sample);
		pipeline_feed(&fresh, &fake, &buffer, &fresh_sample);
		assert_same_frames(&kept_sample, &fresh_sample);
		assert_int_equal(fresh_sample.stack_id, 0);
		/* Every frame was named: every stack is kept. */
		assert_true(kept_sample.stack_id != 0);
		if (n % 7 == 0) {
			assert_int_equal(has_frame_named(&kept_sample, "renamed_3!"), n >= 100);
			assert_int_equal(has_frame_named(&kept_sample, "function_3"), n < 100);
		}
	}
	/* 9 distinct records (depth 30 at 3 leaf offsets, truncated, with kernel frames; depth 900 at
	 * 2, with kernel frames; depth 40 and 12), each resolved again when the rename gives the 8 that
	 * hold function 3 a new identity, and all 9 after the forget. */
	assert_int_equal(keeping.resolver.stack_misses, 9 + 8 + 9);
	assert_int_equal(keeping.resolver.stack_hits, 300 - (9 + 8 + 9));
	assert_int_equal(fresh.resolver.stack_hits, 0);
	assert_int_equal(keeping.resolver.unresolved_frames, 0);
	pipeline_close(&keeping);
	pipeline_close(&fresh);
	assert_same_files(&keeping, &fresh);
	fake_python_free(&fake);
}

/* The same record twice: the same frames and stack id; after the process is forgotten, a new id. */
static void test_stack_id_follows_the_stack(void **state)
{
	static struct sample_resolver resolver;
	static struct fake_record buffer;
	const size_t codes[] = { 4, 3, 2, 1 };
	struct fake_python fake;
	struct pf_sample first, second, third;

	(void)state;
	fake_python_init(&fake, 8);
	assert_int_equal(sample_resolve_init(&resolver, NULL, NULL, 1000), 0);
	fake_python_record(&fake, &buffer, codes, 4, 0, NULL, 0);
	assert_int_equal(sample_resolve_record(&resolver, &buffer.record, buffer.size, &fake.python, &first), 0);
	assert_true(first.stack_id != 0);
	assert_int_equal(first.frame_count, 4);
	assert_string_equal(first.frames[0].name, "function_1");
	buffer.record.time_ns += 1000000;
	assert_int_equal(sample_resolve_record(&resolver, &buffer.record, buffer.size, &fake.python, &second), 0);
	assert_true(second.stack_id == first.stack_id);
	assert_int_equal(second.timestamp_us, first.timestamp_us + 1000);
	assert_same_frames(&first, &second);
	symbolize_py_forget_pid(resolver.python, fake.python.pid);
	assert_int_equal(sample_resolve_record(&resolver, &buffer.record, buffer.size, &fake.python, &third), 0);
	assert_true(third.stack_id != 0 && third.stack_id != first.stack_id);
	assert_int_equal(resolver.stack_hits, 1);
	sample_resolve_free(&resolver);
	fake_python_free(&fake);
}

/* A frame that cannot be named now may be named later: its stack is never kept. */
static void test_unresolved_stacks_are_not_kept(void **state)
{
	static struct sample_resolver resolver;
	static struct fake_record buffer;
	const size_t codes[] = { 1, 0 };
	struct fake_python fake;
	struct pf_sample sample;

	(void)state;
	fake_python_init(&fake, 2);
	assert_int_equal(sample_resolve_init(&resolver, NULL, NULL, 1000), 0);
	fake_python_record(&fake, &buffer, codes, 2, 0, NULL, 0);
	/* a checksum no live object has: -ESTALE */
	((struct pbp_py_frame *)(buffer.bytes + sizeof(struct pbp_record)))[0].checksum ^= 1;
	for (int i = 0; i < 2; i++) {
		sample_resolve_prefetch(&resolver, &buffer.record, buffer.size, &fake.python);
		assert_int_equal(sample_resolve_record(&resolver, &buffer.record, buffer.size, &fake.python, &sample), 0);
		assert_int_equal(sample.stack_id, 0);
		assert_int_equal(sample.frames[0].kind, PF_FRAME_INVALID);
		assert_true(has_frame_named(&sample, "<unresolved>"));
	}
	assert_int_equal(resolver.unresolved_frames, 2);
	assert_int_equal(resolver.stack_hits, 0);
	/* Without a runtime yet every Python frame is unresolved. */
	assert_int_equal(sample_resolve_record(&resolver, &buffer.record, buffer.size, NULL, &sample), 0);
	assert_int_equal(sample.stack_id, 0);
	sample_resolve_free(&resolver);
	fake_python_free(&fake);
}

static void *put_word(struct memo_cache *cache, uint64_t key, uint64_t value)
{
	uint64_t *kept = memo_cache_put(cache, memo_cache_hash(&key, sizeof(key)), &key, sizeof(key), sizeof(value));

	if (kept)
		*kept = value;
	return kept;
}

static uint64_t find_word(struct memo_cache *cache, uint64_t key)
{
	size_t len = 0;
	const uint64_t *value = memo_cache_find(cache, memo_cache_hash(&key, sizeof(key)), &key, sizeof(key), &len);

	if (!value)
		return 0;
	assert_int_equal(len, sizeof(*value));
	return *value;
}

/* The clock gives a found entry a second chance; the budgets hold; a hash alone never matches. */
static void test_memo_cache(void **state)
{
	struct memo_cache cache;
	uint64_t key = 1, other = 2, value_of_key = 11;

	(void)state;
	memo_cache_init(&cache, 3, 1 << 20);
	for (uint64_t i = 1; i <= 3; i++)
		assert_non_null(put_word(&cache, i, i * 11));
	assert_int_equal(find_word(&cache, 1), 11);
	assert_non_null(put_word(&cache, 4, 44));
	/* 1 was found since the hand passed: 2 goes instead. */
	assert_int_equal(find_word(&cache, 1), 11);
	assert_int_equal(find_word(&cache, 2), 0);
	assert_int_equal(find_word(&cache, 3), 33);
	assert_int_equal(find_word(&cache, 4), 44);
	assert_int_equal(cache.count, 3);
	assert_int_equal(cache.evictions, 1);
	memo_cache_clear(&cache);
	assert_int_equal(find_word(&cache, 1), 0);
	assert_int_equal(cache.bytes, 0);
	memo_cache_free(&cache);

	/* Bytes: entries of 120 bytes (a 100-byte value aligned, an 8-byte key) in 256. */
	memo_cache_init(&cache, 100, 256);
	for (uint64_t i = 1; i <= 5; i++)
		assert_non_null(memo_cache_put(&cache, memo_cache_hash(&i, sizeof(i)), &i, sizeof(i), 100));
	assert_int_equal(cache.count, 2);
	assert_true(cache.bytes <= 256);
	assert_null(memo_cache_put(&cache, 9, &key, sizeof(key), 300));
	memo_cache_free(&cache);

	/* Two keys under one hash: each finds its own, never the other's. */
	memo_cache_init(&cache, 8, 1 << 20);
	*(uint64_t *)memo_cache_put(&cache, 42, &key, sizeof(key), sizeof(uint64_t)) = value_of_key;
	{
		size_t len;

		assert_null(memo_cache_find(&cache, 42, &other, sizeof(other), &len));
		assert_non_null(memo_cache_find(&cache, 42, &key, sizeof(key), &len));
		assert_null(memo_cache_find(&cache, 42, &key, sizeof(key) - 1, &len));
	}
	memo_cache_free(&cache);
	/* A cache with no room keeps nothing. */
	memo_cache_init(&cache, 0, 0);
	assert_null(put_word(&cache, 1, 1));
	memo_cache_free(&cache);
}

/* A budget of four 120-byte entries (a 100-byte value aligned, an 8-byte key) and some. */
#define MEMO_BUDGET_BYTES 500

static void *put_sized(struct memo_cache *cache, uint64_t key)
{
	return memo_cache_put(cache, memo_cache_hash(&key, sizeof(key)), &key, sizeof(key), 100);
}

/*
 * Under a target budget the cache's bytes are the budget's: a hundred puts never hold more than
 * its share of the limit (evictions counted as the store's); another store's charge evicts the
 * cache's least recently used entries but never the one last found (its pointer is the
 * caller's); what the cache frees leaves the budget.
 */
static void test_memo_cache_under_a_target_budget(void **state)
{
	struct target_budget_store_stats stores[TARGET_BUDGET_MAX_STORES];
	struct target_budget *budget;
	struct memo_cache cache;
	uint64_t key;
	size_t len;
	void *found;
	int other;

	(void)state;
	assert_int_equal(target_budget_new(MEMO_BUDGET_BYTES, &budget), 0);
	memo_cache_init(&cache, 100, 1 << 20);
	assert_int_equal(memo_cache_set_budget(&cache, budget, "memo", 100), 0);
	other = target_budget_register(budget, "other", NULL, NULL, NULL);
	for (uint64_t i = 1; i <= 100; i++) {
		assert_non_null(put_sized(&cache, i));
		assert_true(target_budget_held(budget) <= MEMO_BUDGET_BYTES);
		assert_int_equal(target_budget_held(budget), cache.bytes);
	}
	assert_true(cache.count <= 4);
	/* the most recent stayed, the first went */
	assert_non_null(memo_cache_find(&cache, memo_cache_hash(&(uint64_t){ 100 }, 8), &(uint64_t){ 100 }, 8, &len));
	assert_null(memo_cache_find(&cache, memo_cache_hash(&(uint64_t){ 1 }, 8), &(uint64_t){ 1 }, 8, &len));
	target_budget_stats(budget, stores);
	assert_true(stores[0].evictions > 0);
	assert_int_equal(stores[0].refusals, 0);

	/* an older entry is found again: it is the caller's, and the other store takes the rest */
	found = NULL;
	for (key = 99; key > 0 && !found; key--)
		found = memo_cache_find(&cache, memo_cache_hash(&key, sizeof(key)), &key, sizeof(key), &len);
	key++;
	assert_non_null(found);
	assert_int_equal(target_budget_charge(budget, other, MEMO_BUDGET_BYTES - 120), 0);
	assert_int_equal(cache.count, 1);
	assert_ptr_equal(memo_cache_find(&cache, memo_cache_hash(&key, sizeof(key)), &key, sizeof(key), &len),
			 found);
	/* no room for another: refused, nothing kept */
	assert_null(put_sized(&cache, 200));
	assert_int_equal(cache.count, 1);
	memo_cache_clear(&cache);
	assert_int_equal(target_budget_held(budget), MEMO_BUDGET_BYTES - 120);
	memo_cache_free(&cache);
	target_budget_free(budget);
}


/* Once the resolver forgets its stacks their ids never come back: a writer's known stacks let
 * everything go (a whole-host run forgets them with every process), and keep what comes after. */
static void test_known_stacks_let_dead_ids_go(void **state)
{
	struct known_stacks known;
	uint64_t first = pf_stack_id_new(), second = pf_stack_id_new();
	size_t len = 0, empty;
	uint32_t id = 0;
	void *kept;

	(void)state;
	known_stacks_init(&known, KNOWN_STACKS_ID_BYTES);
	empty = known_stacks_held_bytes(&known);
	kept = known_stacks_put(&known, first, 1, 100);
	assert_non_null(kept);
	memset(kept, 0xab, 100);
	known_stacks_put_id(&known, second, 42);
	assert_non_null(known_stacks_find(&known, first, 1, &len));
	assert_int_equal(len, 100);
	assert_true(known_stacks_find_id(&known, second, &id));
	assert_int_equal(id, 42);
	assert_true(known_stacks_held_bytes(&known) > empty + 100);

	pf_stack_ids_die();
	assert_null(known_stacks_find(&known, first, 1, &len));
	assert_false(known_stacks_find_id(&known, second, &id));
	assert_int_equal(known.cache.count, 0);
	assert_int_equal(known.cache.bytes, 0);

	/* an id given after they died is kept as before */
	first = pf_stack_id_new();
	known_stacks_put_id(&known, first, 7);
	assert_true(known_stacks_find_id(&known, first, &id));
	assert_int_equal(id, 7);
	known_stacks_free(&known);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_stacks_write_the_same_files),
		cmocka_unit_test(test_stack_id_follows_the_stack),
		cmocka_unit_test(test_unresolved_stacks_are_not_kept),
		cmocka_unit_test(test_memo_cache),
		cmocka_unit_test(test_memo_cache_under_a_target_budget),
		cmocka_unit_test(test_known_stacks_let_dead_ids_go),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
