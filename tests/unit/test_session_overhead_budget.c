// SPDX-License-Identifier: MIT
/*
 * session/overhead_budget (--max-overhead) in process: the stride a target's cost asks for, and
 * thinned samples' weights through the formats that count samples.
 */
#include "testlib.h"

#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <sys/wait.h>

#include "session/overhead_budget.h"

#define INTERVAL_US 100 /* -F 10000 */

/* ---- the stride (no BPF) ---- */

/* An account of `walks` kept walks of walk_ns each over ticks ticks. */
static struct pbp_budget_usage account(uint64_t ticks, uint64_t walks, uint64_t walk_ns)
{
	return (struct pbp_budget_usage){ .ticks = ticks, .kept = walks, .spent_ns = walks * walk_ns };
}

static void within_budget_keeps_every_tick(void **state)
{
	/* 1000 ticks in a second, 5 us each: 0.5% of a CPU, under 1%. */
	struct pbp_budget_usage delta = account(1000, 1000, 5000);

	(void)state;
	assert_int_equal(overhead_budget_stride(&delta, 1000000000ull, 0.01, 1000, 1), 1);
}

static void over_budget_thins_to_fit(void **state)
{
	/* 10000 ticks a second at 60 us a walk: 60% of a CPU; 1% takes one tick in 60 (and a tenth more). */
	struct pbp_budget_usage delta = account(10000, 10000, 60000);
	uint32_t stride = overhead_budget_stride(&delta, 1000000000ull, 0.01, 10000, 1);

	(void)state;
	assert_int_equal(stride, 66);
	/* Thinned, the walks then cost 60% / 66 of a CPU: within the budget. */
	assert_true(0.60 / stride <= 0.01);
	/* The same cost seen at that stride (one walk in 66 kept): the stride holds. */
	delta = account(10000, 10000 / 66, 60000);
	assert_int_equal(overhead_budget_stride(&delta, 1000000000ull, 0.01, 10000, stride), stride);
}

static void share_of_its_own_cpu_time_and_of_a_cpu(void **state)
{
	/* On a tenth of a CPU (1000 ticks a second at 10 kHz), 5 us walks take 0.5% of a CPU but 5%
	 * of the target's own time: held to 1% of that, one tick in 6. */
	struct pbp_budget_usage starved = account(1000, 1000, 5000), two_cpus = account(20000, 20000, 5000);

	(void)state;
	assert_int_equal(overhead_budget_stride(&starved, 1000000000ull, 0.01, 10000, 1), 6);
	/* On two CPUs (20000 ticks a second), the same walks take 10% of one CPU: one tick in 11. */
	assert_int_equal(overhead_budget_stride(&two_cpus, 1000000000ull, 0.01, 10000, 1), 11);
}

static void stride_follows_the_cost_down_past_noise(void **state)
{
	/* The need falls a little (60 -> 55 us): the stride stays; by half: it follows. */
	struct pbp_budget_usage a_little = account(10000, 150, 55000), by_half = account(10000, 150, 30000);
	struct pbp_budget_usage idle = account(10000, 150, 500);

	(void)state;
	assert_int_equal(overhead_budget_stride(&a_little, 1000000000ull, 0.01, 10000, 66), 66);
	assert_int_equal(overhead_budget_stride(&by_half, 1000000000ull, 0.01, 10000, 66), 33);
	assert_int_equal(overhead_budget_stride(&idle, 1000000000ull, 0.01, 10000, 66), 1);
}

static void skipped_ticks_come_off_the_budget_first(void **state)
{
	/* 10000 ticks a second at 60 us a walk, seen at stride 66 with skips of 0.5 us: the skips
	 * alone take 0.5% of a CPU (10000 x 0.5 us), so the walks' 59.5 us over a skip get the
	 * other 0.5%: one tick in 131 (and a tenth more), where without the skips it would be 66. */
	struct pbp_budget_usage delta = account(10000, 151, 60000);
	uint32_t stride;

	(void)state;
	delta.skipped_ns = (10000 - 151) * 500ull;
	assert_true(overhead_budget_skip_ns(&delta) == 500.0);
	stride = overhead_budget_stride(&delta, 1000000000ull, 0.01, 10000, 66);
	assert_int_equal(stride, 131);
	/* What a second then costs is within the 1%. */
	assert_true((10000.0 / stride * 60e-6 + 10000.0 * (1 - 1.0 / stride) * 0.5e-6) <= 0.01);
	/* Skips that alone fill the budget (1.2 us at 10 kHz: 1.2%) cannot be thinned: the walks'
	 * 58.8 us over a skip still get half of it, one tick in 130 (the largest stride would leave
	 * a CPU's last ticks of the target unwalked, and their weight lost). */
	delta.skipped_ns = (10000 - 151) * 1200ull;
	assert_int_equal(overhead_budget_stride(&delta, 1000000000ull, 0.01, 10000, 66), 130);
	/* None skipped yet (stride 1): nothing known of a skip, the walks alone decide. */
	delta = account(10000, 10000, 60000);
	assert_true(overhead_budget_skip_ns(&delta) == 0.0);
	assert_int_equal(overhead_budget_stride(&delta, 1000000000ull, 0.01, 10000, 1), 66);
}

static void walks_charged_what_the_target_pays(void **state)
{
	/* 10000 ticks a second at 40 us of BPF time a walk: the target pays 60 us a walk (its
	 * caches refilled after), 60% of a CPU, and 1% of it takes one tick in 66, where the BPF
	 * time alone would ask for 44. Skips are charged as they are. */
	struct pbp_budget_usage delta = account(10000, 10000, 40000), charged;

	(void)state;
	delta.skipped_ns = 1234;
	charged = overhead_budget_charged(&delta);
	assert_int_equal(charged.spent_ns, 10000ull * 60000);
	assert_int_equal(charged.skipped_ns, 1234);
	assert_int_equal(charged.ticks, delta.ticks);
	assert_int_equal(charged.kept, delta.kept);
	assert_int_equal(overhead_budget_stride(&delta, 1000000000ull, 0.01, 10000, 1), 44);
	assert_int_equal(overhead_budget_stride(&charged, 1000000000ull, 0.01, 10000, 1), 66);
}

static void nothing_learned_keeps_the_stride(void **state)
{
	struct pbp_budget_usage none = account(5000, 0, 0), huge = account(100000, 100, 10000000);

	(void)state;
	assert_int_equal(overhead_budget_stride(&none, 1000000000ull, 0.01, 10000, 7), 7);
	assert_int_equal(overhead_budget_stride(&none, 0, 0.01, 10000, 7), 7);
	/* A walk of 10 ms at 100k ticks/s: the stride is capped at what a record's weight holds. */
	assert_int_equal(overhead_budget_stride(&huge, 1000000000ull, 0.01, 100000, 1), PBP_BUDGET_MAX_STRIDE);
}

/* ---- weights through the formats (no BPF) ---- */

static const struct pf_frame weighed_frames[] = {
	{ PF_FRAME_PYTHON, "w.py", "<module>", 1, 1, -1, -1, -1, 1 },
	{ PF_FRAME_PYTHON, "w.py", "heavy", 5, 5, -1, -1, -1, 4 },
};

/* A recording of two samples of one stack, one of them standing for `samples` ticks, in format. */
static void write_weighed(const char *path, const char *format, uint32_t samples)
{
	const struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;
	struct pf_run_info info = { .interval_us = INTERVAL_US, .mode = "cpu", .frequency_hz = 10000,
				    .start_time_us = 1000 };
	struct pf_writer *writer;
	struct pf_sample sample = { .pid = 7, .tid = 7, .timestamp_us = 2000, .status = PF_STATUS_ON_CPU,
				    .metrics = PF_METRIC_TIME, .time_us = INTERVAL_US, .frame_count = 2,
				    .frames = weighed_frames };

	assert_int_equal(pf_writer_open(&writer, path, format_registry_find_name(format), &options), 0);
	assert_int_equal(pf_writer_set_run_info(writer, &info), 0);
	assert_int_equal(pf_writer_set_metadata(writer, "pybpfprof", "0.1.0"), 0);
	assert_int_equal(pf_writer_add_sample(writer, &sample), 0);
	sample.timestamp_us += INTERVAL_US * samples;
	sample.time_us = (uint64_t)INTERVAL_US * samples;
	sample.samples = samples;
	assert_int_equal(pf_writer_add_sample(writer, &sample), 0);
	assert_int_equal(pf_writer_close(writer), 0);
}

/* Samples read back, the time they weigh, and the ticks they stand for. */
static void read_weighed(const char *path, size_t *samples, int64_t *weight, uint64_t *ticks)
{
	struct pf_reader *reader = test_open_profile(path);
	struct pf_sample sample;
	int got;

	*samples = 0;
	*weight = 0;
	*ticks = 0;
	while ((got = pf_reader_next_sample(reader, &sample)) > 0) {
		(*samples)++;
		*weight += pf_sample_weight(&sample);
		*ticks += sample.samples ? sample.samples : 1;
	}
	assert_int_equal(got, 0);
	pf_reader_close(reader);
}

static void weights_hold_in_every_format(void **state)
{
	static const char *const formats[] = { "mojo", "tachyon", "collapsed" };
	char path[PATH_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		size_t samples;
		int64_t weight;
		uint64_t ticks;

		FORMAT(path, "%s/weighed.%s", test_tmpdir(), formats[i]);
		write_weighed(path, formats[i], 37);
		read_weighed(path, &samples, &weight, &ticks);
		print_message("%s: %zu samples, %" PRId64 " us\n", formats[i], samples, weight);
		/* 1 + 37 ticks of 100 us, whichever way the format keeps them. */
		assert_int_equal(weight, 38 * INTERVAL_US);
		if (strcmp(formats[i], "tachyon") == 0)
			assert_int_equal(samples, 38); /* it counts samples: the weighed one is repeated */
		/* Read back, a MOJO file of ours says how many ticks: converted to Tachyon, it keeps them. */
		if (strcmp(formats[i], "collapsed") != 0)
			assert_int_equal(ticks, 38);
	}
}

struct split_findings {
	int64_t heavy_us, light_us;   /* time in the split's heavy and light, as the file weighs it */
	size_t samples, weighed;      /* samples, and those standing for more than one tick */
	const char *throttled;        /* a throttled.PID metadata value, NULL if none */
	bool budget_said;             /* a max_overhead metadata line */
};

int main(void)
{
	const struct CMUnitTest units[] = {
		cmocka_unit_test(within_budget_keeps_every_tick),
		cmocka_unit_test(over_budget_thins_to_fit),
		cmocka_unit_test(share_of_its_own_cpu_time_and_of_a_cpu),
		cmocka_unit_test(stride_follows_the_cost_down_past_noise),
		cmocka_unit_test(skipped_ticks_come_off_the_budget_first),
		cmocka_unit_test(walks_charged_what_the_target_pays),
		cmocka_unit_test(nothing_learned_keeps_the_stride),
		cmocka_unit_test(weights_hold_in_every_format),
	};

	return cmocka_run_group_tests_name("overhead_budget", units, NULL, NULL);
}
