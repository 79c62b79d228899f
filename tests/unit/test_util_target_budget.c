// SPDX-License-Identifier: MIT
/* util/target_budget: one limit over several stores, least recently used eviction across
 * them, refusals of what cannot fit, and the counts the -v summary shows. */
#include "testlib.h"

#include "util/target_budget.h"

#include <errno.h>

#define FAKE_OBJECTS 64

/* A store of objects of some bytes each, stamped with the budget's clock on use. */
struct fake_store {
	struct target_budget *budget;
	int id;
	uint64_t bytes[FAKE_OBJECTS];
	uint64_t used[FAKE_OBJECTS];
	bool alive[FAKE_OBJECTS];
	int evict_calls;
};

static uint64_t fake_oldest(void *context)
{
	struct fake_store *store = context;
	uint64_t oldest = UINT64_MAX;

	for (int i = 0; i < FAKE_OBJECTS; i++)
		if (store->alive[i] && store->used[i] < oldest)
			oldest = store->used[i];
	return oldest;
}

static uint64_t fake_evict(void *context, uint64_t bytes, uint64_t older_than)
{
	struct fake_store *store = context;
	uint64_t freed = 0;

	store->evict_calls++;
	while (freed < bytes) {
		int oldest = -1;

		for (int i = 0; i < FAKE_OBJECTS; i++)
			if (store->alive[i] && (oldest < 0 || store->used[i] < store->used[oldest]))
				oldest = i;
		if (oldest < 0 || (freed && store->used[oldest] >= older_than))
			break;
		store->alive[oldest] = false;
		freed += store->bytes[oldest];
	}
	return freed;
}

/* Object i of bytes, kept if the budget takes it; the charge's result. */
static int fake_add(struct fake_store *store, int i, uint64_t bytes)
{
	int err = target_budget_charge(store->budget, store->id, bytes);

	if (!err) {
		store->bytes[i] = bytes;
		store->alive[i] = true;
		store->used[i] = target_budget_tick(store->budget);
	}
	return err;
}

static void fake_use(struct fake_store *store, int i)
{
	store->used[i] = target_budget_tick(store->budget);
}

static void fake_register(struct target_budget *budget, struct fake_store *store, const char *name)
{
	*store = (struct fake_store){ .budget = budget };
	store->id = target_budget_register(budget, name, fake_oldest, fake_evict, store);
	assert_true(store->id >= 0);
}

static struct target_budget_store_stats stats_of(const struct target_budget *budget, int id)
{
	struct target_budget_store_stats stats[TARGET_BUDGET_MAX_STORES];

	assert_true(target_budget_stats(budget, stats) > id);
	return stats[id];
}

static void charges_within_the_limit_are_held_and_counted(void **state)
{
	struct target_budget *budget;
	struct fake_store lines, symbols;

	(void)state;
	assert_int_equal(target_budget_new(0, &budget), 0);
	assert_int_equal(target_budget_limit(budget), TARGET_BUDGET_DEFAULT_BYTES);
	fake_register(budget, &lines, "line tables");
	fake_register(budget, &symbols, "symbol tables");
	assert_int_equal(fake_add(&lines, 0, 1000), 0);
	assert_int_equal(fake_add(&symbols, 0, 500), 0);
	target_budget_release(budget, lines.id, 400);
	assert_int_equal(target_budget_held(budget), 1100);
	assert_int_equal(target_budget_peak(budget), 1500);
	assert_string_equal(stats_of(budget, lines.id).name, "line tables");
	assert_int_equal(stats_of(budget, lines.id).held, 600);
	assert_int_equal(stats_of(budget, lines.id).peak, 1000);
	assert_int_equal(stats_of(budget, symbols.id).held, 500);
	assert_int_equal(lines.evict_calls + symbols.evict_calls, 0);
	/* a release past what a store holds frees what it holds, no more */
	target_budget_release(budget, symbols.id, 10000);
	assert_int_equal(target_budget_held(budget), 600);
	target_budget_free(budget);
}

static void the_least_recently_used_go_first_whichever_store_holds_them(void **state)
{
	struct target_budget *budget;
	struct fake_store lines, symbols;

	(void)state;
	assert_int_equal(target_budget_new(1000, &budget), 0);
	fake_register(budget, &lines, "line tables");
	fake_register(budget, &symbols, "symbol tables");
	assert_int_equal(fake_add(&lines, 0, 300), 0);   /* oldest, then used again: newest */
	assert_int_equal(fake_add(&symbols, 0, 300), 0); /* the least recently used */
	assert_int_equal(fake_add(&lines, 1, 300), 0);
	fake_use(&lines, 0);
	/* 300 more do not fit in 1000 with 900 held: the symbols' table goes, nothing else */
	assert_int_equal(fake_add(&lines, 2, 300), 0);
	assert_false(symbols.alive[0]);
	assert_true(lines.alive[0] && lines.alive[1] && lines.alive[2]);
	assert_int_equal(target_budget_held(budget), 900);
	assert_int_equal(stats_of(budget, symbols.id).evictions, 1);
	assert_int_equal(stats_of(budget, symbols.id).evicted_bytes, 300);
	assert_int_equal(stats_of(budget, symbols.id).held, 0);
	/* then the charging store's own oldest (lines[1]): the budget is one, not one per store */
	assert_int_equal(fake_add(&symbols, 1, 200), 0);
	assert_false(lines.alive[1]);
	assert_true(lines.alive[0] && lines.alive[2]);
	assert_int_equal(stats_of(budget, lines.id).evictions, 1);
	assert_true(target_budget_held(budget) <= 1000);
	target_budget_free(budget);
}

static void a_full_budget_evicts_in_batches_down_to_its_low_water(void **state)
{
	struct target_budget *budget;
	struct fake_store lines;
	int calls;

	(void)state;
	assert_int_equal(target_budget_new(1000, &budget), 0);
	fake_register(budget, &lines, "line tables");
	for (int i = 0; i < 20; i++)
		assert_int_equal(fake_add(&lines, i, 50), 0);
	/* full: one more evicts until 90% of the limit, less what is charged, is held */
	assert_int_equal(fake_add(&lines, 20, 50), 0);
	assert_int_equal(target_budget_held(budget), 1000 / 100 * TARGET_BUDGET_LOW_WATER_PERCENT);
	calls = lines.evict_calls;
	/* so the next ones fit without evicting */
	assert_int_equal(fake_add(&lines, 21, 50), 0);
	assert_int_equal(fake_add(&lines, 22, 50), 0);
	assert_int_equal(lines.evict_calls, calls);
	assert_true(target_budget_peak(budget) <= 1000);
	target_budget_free(budget);
}

static void what_cannot_fit_is_refused_and_counted(void **state)
{
	struct target_budget *budget;
	struct fake_store lines;
	int writers, calls;

	(void)state;
	assert_int_equal(target_budget_new(1000, &budget), 0);
	fake_register(budget, &lines, "line tables");
	writers = target_budget_register(budget, "output tables", NULL, NULL, NULL);
	assert_true(writers >= 0);
	/* larger than the whole limit: refused at once, nothing evicted for it */
	assert_int_equal(fake_add(&lines, 0, 400), 0);
	assert_int_equal(fake_add(&lines, 1, 1001), -ENOSPC);
	assert_true(lines.alive[0]);
	assert_int_equal(lines.evict_calls, 0);
	assert_int_equal(stats_of(budget, lines.id).refusals, 1);
	/* a store that cannot evict holds what it holds: the others' objects go for it, then it
	 * is refused */
	assert_int_equal(target_budget_charge(budget, writers, 500), 0);
	assert_int_equal(target_budget_charge(budget, writers, 200), 0);
	assert_false(lines.alive[0]);
	calls = lines.evict_calls;
	assert_int_equal(target_budget_charge(budget, writers, 400), -ENOSPC);
	assert_int_equal(lines.evict_calls, calls);
	assert_int_equal(stats_of(budget, writers).refusals, 1);
	assert_int_equal(stats_of(budget, writers).held, 700);
	assert_int_equal(target_budget_held(budget), 700);
	target_budget_free(budget);
}

static void a_counted_store_makes_room_and_is_held_even_when_refused(void **state)
{
	struct target_budget *budget;
	struct fake_store lines;
	int outputs;

	(void)state;
	assert_int_equal(target_budget_new(1000, &budget), 0);
	fake_register(budget, &lines, "line tables");
	outputs = target_budget_register(budget, "output tables", NULL, NULL, NULL);
	for (int i = 0; i < 8; i++)
		assert_int_equal(fake_add(&lines, i, 100), 0);
	/* output tables grow to 500: the line tables' oldest make room */
	target_budget_set_held(budget, outputs, 500);
	assert_int_equal(stats_of(budget, outputs).held, 500);
	assert_false(lines.alive[0]);
	assert_true(lines.alive[7]);
	assert_true(target_budget_held(budget) <= 1000);
	/* past what can be made room for: refused (counted) but held, as it is */
	target_budget_set_held(budget, outputs, 1200);
	assert_int_equal(stats_of(budget, outputs).held, 1200);
	assert_int_equal(stats_of(budget, outputs).refusals, 1);
	assert_int_equal(stats_of(budget, lines.id).held, 0);
	/* and shrinks */
	target_budget_set_held(budget, outputs, 100);
	assert_int_equal(target_budget_held(budget), 100);
	/* every byte that left, evicted or released */
	assert_int_equal(target_budget_freed_total(budget), 800 + 1100);
	target_budget_free(budget);
}

/* Counted stores past the limit leave no room: a charge is refused, not taken because the
 * room left wrapped around below zero. */
static void a_budget_counted_past_its_limit_takes_no_charge(void **state)
{
	struct target_budget *budget;
	struct fake_store lines;
	int outputs;

	(void)state;
	assert_int_equal(target_budget_new(1000, &budget), 0);
	fake_register(budget, &lines, "line tables");
	outputs = target_budget_register(budget, "output tables", NULL, NULL, NULL);
	target_budget_set_held(budget, outputs, 1200);
	assert_int_equal(fake_add(&lines, 0, 10), -ENOSPC);
	assert_int_equal(stats_of(budget, lines.id).held, 0);
	assert_int_equal(stats_of(budget, lines.id).refusals, 1);
	assert_int_equal(target_budget_held(budget), 1200);
	target_budget_free(budget);
}

/* A store under a fixed cap of its own is shown with the others but outside the limit: a
 * full budget evicts nothing for it, and its bytes are not in what the limit holds. */
static void a_fixed_store_is_shown_outside_the_limit(void **state)
{
	struct target_budget *budget;
	struct fake_store lines;
	int verdicts;

	(void)state;
	assert_int_equal(target_budget_new(1000, &budget), 0);
	fake_register(budget, &lines, "line tables");
	verdicts = target_budget_register(budget, "file verdicts", NULL, NULL, NULL);
	assert_true(verdicts >= 0);
	assert_int_equal(fake_add(&lines, 0, 900), 0);
	target_budget_set_fixed(budget, verdicts, 5000);
	target_budget_set_fixed(budget, verdicts, 3000);
	assert_int_equal(target_budget_held(budget), 900);
	assert_int_equal(lines.evict_calls, 0);
	assert_int_equal(stats_of(budget, verdicts).held, 3000);
	assert_int_equal(stats_of(budget, verdicts).peak, 5000);
	assert_true(stats_of(budget, verdicts).fixed);
	assert_false(stats_of(budget, lines.id).fixed);
	assert_int_equal(stats_of(budget, verdicts).refusals, 0);
	target_budget_free(budget);
}

static void stores_past_the_most_are_refused(void **state)
{
	struct target_budget *budget;

	(void)state;
	assert_int_equal(target_budget_new(1000, &budget), 0);
	for (int i = 0; i < TARGET_BUDGET_MAX_STORES; i++)
		assert_int_equal(target_budget_register(budget, "store", NULL, NULL, NULL), i);
	assert_int_equal(target_budget_register(budget, "one too many", NULL, NULL, NULL), -ENOSPC);
	target_budget_free(budget);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(charges_within_the_limit_are_held_and_counted),
		cmocka_unit_test(the_least_recently_used_go_first_whichever_store_holds_them),
		cmocka_unit_test(a_full_budget_evicts_in_batches_down_to_its_low_water),
		cmocka_unit_test(what_cannot_fit_is_refused_and_counted),
		cmocka_unit_test(a_counted_store_makes_room_and_is_held_even_when_refused),
		cmocka_unit_test(a_budget_counted_past_its_limit_takes_no_charge),
		cmocka_unit_test(stores_past_the_most_are_refused),
		cmocka_unit_test(a_fixed_store_is_shown_outside_the_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
