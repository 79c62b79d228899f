// SPDX-License-Identifier: MIT
/*
 * Mixed stacks end to end (real BPF, root): C code in place between Python
 * frames (ctypes callbacks, sorted's key, numpy and its BLAS, libc's read under
 * the kernel's), walks that stop say why, perf's DWARF unwinder sees the same
 * heavy paths, two CPU hogs beside the target take none of its native frames,
 * and deep stacks grow the ring buffer.
 */
#include "record_run.h"
#include "sample_frames.h"

#include "formats/format_registry.h"
#include "profile/profile.h"
#include "worker/unwind_build.h"
#include "util/array.h"
#include "util/exit_status.h"

#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stddef.h>

#include <math.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#define WORKLOAD "workload.py"
#define MAX_PYTHONS 32

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;

static const struct test_python *find_python(const char *label)
{
	return test_python_find(pythons, python_count, label);
}

struct native_findings {
	size_t loop_samples;    /* samples under compress_loop */
	size_t in_libz;         /* ... whose leaf is a native frame in libz */
	size_t native_frames;   /* native frames anywhere */
};

/* Profiles native_work.py (its zlib loop) with options extra into TMP/NAME-LABEL.mojo and opens it. */
static struct pf_reader *profile_native_work_file(const struct test_python *python, const char *extra,
						   const char *name)
{
	char command[1400], script[PATH_MAX], out[PATH_MAX], err[4096];
	struct pf_reader *reader = NULL;
	char *argv[32];
	int status;

	script_path(script, sizeof(script), "native_work.py");
	FORMAT(out, "%s/%s-%s.mojo", test_tmpdir(), name, python->label);
	FORMAT(command, "%s -q %s -o %s -- %s %s", pybpfprof_binary(), extra, out, python->command, script);
	split_command(command, argv, 32);
	status = run_capture(argv, err, sizeof(err));
	if (status != 0)
		fail_msg("%s: pybpfprof exited %d: %s", python->label, status, err);
	assert_int_equal(format_registry_open_reader(&reader, out, err, sizeof(err)), 0);
	return reader;
}

static void profile_native_work(const struct test_python *python, const char *extra, struct native_findings *found)
{
	struct pf_reader *reader;
	struct pf_sample sample;

	memset(found, 0, sizeof(*found));
	reader = profile_native_work_file(python, extra, "native");
	while (pf_reader_next_sample(reader, &sample) > 0) {
		const struct pf_frame *leaf = sample.frame_count ? &sample.frames[sample.frame_count - 1] : NULL;

		found->native_frames += count_kind(&sample, PF_FRAME_NATIVE);
		if (!count_named(&sample, "compress_loop"))
			continue;
		found->loop_samples++;
		found->in_libz += leaf && leaf->kind == PF_FRAME_NATIVE && strstr(leaf->file, "/libz.so");
	}
	pf_reader_close(reader);
}

/* A sample that lands in a C library names it (and its function, where the library has a symbol). */
static void native_leaf_frames_name_c_code(void **state)
{
	static const char *const labels[] = { "2.7", "3.12", "3.15" };

	(void)state;
	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
		const struct test_python *python = find_python(labels[i]);
		struct native_findings found;

		if (!python) {
			print_message("%s is absent on this machine; skipped\n", labels[i]);
			continue;
		}
		profile_native_work(python, "", &found);
		print_message("%s: %zu of %zu compress_loop samples end in libz\n", labels[i], found.in_libz,
			      found.loop_samples);
		assert_true(found.loop_samples >= 500);
		/* zlib.compress at level 9 spends nearly all its time in libz's deflate. */
		assert_true(found.in_libz * 10 >= found.loop_samples * 7);
		profile_native_work(python, "--no-native", &found);
		assert_true(found.loop_samples >= 500);
		assert_int_equal(found.native_frames, 0);
	}
}

/* What a mixed-stack profile of native_work.py shows. */
struct mixed_findings {
	size_t loop_samples;        /* samples under compress_loop */
	size_t native_above_loop;   /* ... with a native frame above (leafward of) compress_loop */
	size_t libz_leaf;           /* ... whose leaf is in libz */
	size_t python_root;         /* samples whose root frame is a Python frame */
	size_t samples;
	double root_share;          /* native_root_share: walks that reached the root */
	unsigned long walks;        /* native_walks */
	unsigned long merge_failures;
};

static void profile_mixed(const struct test_python *python, const char *extra, struct mixed_findings *found)
{
	struct pf_reader *reader;
	struct pf_sample sample;
	const char *value;

	memset(found, 0, sizeof(*found));
	reader = profile_native_work_file(python, extra, "mixed");
	while (pf_reader_next_sample(reader, &sample) > 0) {
		const struct pf_frame *leaf = sample.frame_count ? &sample.frames[sample.frame_count - 1] : NULL;
		size_t loop_at = sample.frame_count;

		found->samples++;
		found->python_root += sample.frame_count && sample.frames[0].kind == PF_FRAME_PYTHON;
		for (size_t f = 0; f < sample.frame_count; f++)
			if (sample.frames[f].kind == PF_FRAME_PYTHON && strcmp(sample.frames[f].name, "compress_loop") == 0)
				loop_at = f;
		if (loop_at == sample.frame_count)
			continue;
		found->loop_samples++;
		found->libz_leaf += leaf && leaf->kind == PF_FRAME_NATIVE && strstr(leaf->file, "/libz.so");
		for (size_t f = loop_at + 1; f < sample.frame_count; f++) {
			if (sample.frames[f].kind == PF_FRAME_NATIVE) {
				found->native_above_loop++;
				break;
			}
		}
	}
	value = pf_reader_metadata(reader, "native_root_share");
	found->root_share = value ? strtod(value, NULL) : 0;
	value = pf_reader_metadata(reader, "native_walks");
	found->walks = value ? strtoul(value, NULL, 10) : 0;
	value = pf_reader_metadata(reader, "native_merge_failures");
	found->merge_failures = value ? strtoul(value, NULL, 10) : 0;
	pf_reader_close(reader);
}

/* Native frames in place: the C code a Python function called sits above it, the thread's bootstrap
 * is hidden by default and kept by --native=all; nearly every walk reaches the root. */
static void native_stacks_mixed(void **state)
{
	static const char *const labels[] = { "3.10", "3.11", "3.12", "3.15" };

	(void)state;
	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
		const struct test_python *python = find_python(labels[i]);
		struct mixed_findings found;

		if (!python) {
			print_message("%s is absent on this machine; skipped\n", labels[i]);
			continue;
		}
		profile_mixed(python, "", &found);
		if (found.walks == 0) {
			print_message("%s: BPF walks no native stacks (records carry no native pcs); skipped\n",
				      labels[i]);
			continue;
		}
		print_message("%s: %zu of %zu compress_loop samples with C above, %zu end in libz; %zu of %zu samples "
			      "rooted in Python; %.1f%% of %lu walks reached the root; %lu merges disagreed\n",
			      labels[i], found.native_above_loop, found.loop_samples, found.libz_leaf, found.python_root,
			      found.samples, 100.0 * found.root_share, found.walks, found.merge_failures);
		assert_true(found.loop_samples >= 500);
		assert_true(found.libz_leaf * 10 >= found.loop_samples * 7);
		assert_true(found.native_above_loop * 10 >= found.loop_samples * 7);
		assert_true(found.root_share >= 0.8);
		assert_true(found.merge_failures * 20 <= found.samples);
		/* By default the bootstrap below the outermost activation (_start, Py_BytesMain) is hidden. */
		assert_true(found.python_root * 10 >= found.samples * 7);
		profile_mixed(python, "--native=all", &found);
		assert_true(found.loop_samples >= 500);
		assert_true(found.native_above_loop * 10 >= found.loop_samples * 7);
		assert_true(found.python_root * 10 <= found.samples * 3);
	}
}

/* ---- native stacks as a user reads them: one script, one interpreter, one profile ---- */

/* The interpreters the native-stack tests run on: one per frame layout and linkage (static,
 * shared libpython, pyenv, Debian, sid). */
static const char *const native_labels[] = { "2.7", "3.8", "3.11-static", "3.12", "3.13", "3.14", "3.15" };

/* One recorded run of a script: its profile, the profiler's summary and the native-walk metadata. */
struct native_run {
	char path[PATH_MAX];
	char summary[8192];     /* the profiler's stderr */
	int status;
	size_t samples;
	unsigned long walks;
	double root_share;
	unsigned long merge_failures;
	unsigned long ring_bytes; /* the record ring's size at the end */
	char stops[256];        /* "no_mapping=3,deleted_file=5" */
};

/* Runs `python tests/scripts/SCRIPT ARGS` under the profiler (with options extra); the status is kept. */
static void record_native_script(const struct test_python *python, const char *extra, const char *script,
				 const char *args, struct native_run *run)
{
	char command[2048], script_file[PATH_MAX];
	char *argv[32];
	char name[64];

	memset(run, 0, sizeof(*run));
	FORMAT(name, "%s", script);
	*strrchr(name, '.') = 0;
	FORMAT(run->path, "%s/%s-%s.mojo", test_tmpdir(), name, python->label);
	script_path(script_file, sizeof(script_file), script);
	FORMAT(command, "%s %s -o %s -- %s %s %s", pybpfprof_binary(), extra, run->path, python->command,
	       script_file, args);
	split_command(command, argv, 32);
	run->status = run_capture(argv, run->summary, sizeof(run->summary));
}

static void record_native_script_or_fail(const struct test_python *python, const char *extra, const char *script,
					 const char *args, struct native_run *run)
{
	record_native_script(python, extra, script, args, run);
	if (run->status != 0)
		fail_msg("%s: %s %s: pybpfprof exited %d: %s", python->label, script, args, run->status, run->summary);
}

typedef void (*sample_visit)(void *findings, const struct pf_sample *sample);

/* Every sample of the run through visit, then its native-walk metadata. */
static void read_native_run(struct native_run *run, sample_visit visit, void *findings)
{
	struct pf_reader *reader;
	struct pf_sample sample;
	const char *value;
	char err[512];
	int got;

	assert_int_equal(format_registry_open_reader(&reader, run->path, err, sizeof(err)), 0);
	while ((got = pf_reader_next_sample(reader, &sample)) > 0) {
		run->samples++;
		visit(findings, &sample);
	}
	if (got < 0)
		fail_msg("%s: %s", run->path, pf_reader_error(reader));
	value = pf_reader_metadata(reader, "native_walks");
	run->walks = value ? strtoul(value, NULL, 10) : 0;
	value = pf_reader_metadata(reader, "native_root_share");
	run->root_share = value ? strtod(value, NULL) : 0;
	value = pf_reader_metadata(reader, "native_merge_failures");
	run->merge_failures = value ? strtoul(value, NULL, 10) : 0;
	value = pf_reader_metadata(reader, "native_stops");
	FORMAT(run->stops, "%s", value ? value : "");
	value = pf_reader_metadata(reader, "ring_buffer_bytes");
	run->ring_bytes = value ? strtoul(value, NULL, 10) : 0;
	pf_reader_close(reader);
}

/* The interpreter, or NULL after saying why it is skipped. */
static const struct test_python *native_python(const char *label)
{
	const struct test_python *python = find_python(label);

	if (!python)
		print_message("%s is absent on this machine (3.14/3.15: run 'make pythons'); skipped\n", label);
	return python;
}

/* False (and says so) when BPF walked no native stack: records without native pcs. */
static bool walked(const char *label, const struct native_run *run)
{
	if (run->walks)
		return true;
	print_message("%s: BPF walks no native stacks (records carry no native pcs); skipped\n", label);
	return false;
}

/* a. Pure Python on the CPU: the interpreter's own C stack unwinds to the root nearly always. */
static void ignore_sample(void *findings, const struct pf_sample *sample)
{
	(void)findings;
	(void)sample;
}

/* How many walks stops (the metadata's "cause=n,cause=n") says stopped for cause. */
static unsigned long stop_count(const char *stops, const char *cause)
{
	size_t len = strlen(cause);

	for (const char *at = stops; (at = strstr(at, cause)) != NULL; at += len)
		if ((at == stops || at[-1] == ',') && at[len] == '=')
			return strtoul(at + len + 1, NULL, 10);
	return 0;
}

static void native_walks_reach_the_root(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(native_labels); i++) {
		const struct test_python *python = native_python(native_labels[i]);
		unsigned long table_wait;
		struct native_run run;

		if (!python)
			continue;
		record_native_script_or_fail(python, "-v", WORKLOAD, "split", &run);
		read_native_run(&run, ignore_sample, NULL);
		if (!walked(python->label, &run))
			continue;
		print_message("%s: %lu walks, %.2f%% reached the root; the rest by cause: '%s'; %lu merges disagreed\n",
			      python->label, run.walks, 100.0 * run.root_share, run.stops, run.merge_failures);
		assert_true(run.walks >= 500);
		/* While a new target's tables are built (off the sampling path: 30-130 ms, the most
		 * for Debian's large static 3.14/3.15) its walks stop with no_table; every other
		 * walk reaches the root. */
		table_wait = stop_count(run.stops, "no_table");
		assert_true(table_wait * 10 <= run.walks);
		assert_true(run.root_share * (double)run.walks >= 0.99 * (double)(run.walks - table_wait));
		/* Every walk that stopped short is counted by its cause, in the file and in the summary. */
		assert_non_null(strstr(run.summary, "reached the root"));
		if (run.root_share < 1.0) {
			assert_true(run.stops[0] != 0);
			assert_non_null(strstr(run.summary, "stops:"));
		}
	}
}

/* A'. A recursion deeper than the Python frames a sample keeps (the workload's 1500 levels): the
 * walk is cut at the root, and the native frames that ran below the cut (the interpreter's start-up:
 * _start ... Py_RunMain ... run_eval_code_obj) go with it, never above the Python leaf. */
struct deep_cut_findings {
	size_t deep_samples;     /* samples whose Python leaf is bottom_deep */
	size_t marked_at_root;   /* ... with the cut marker at the root */
	size_t startup_frames;   /* ... holding a frame of the interpreter's start-up */
	size_t native_below_leaf; /* ... with a native frame below (rootward of) the Python leaf */
	char example[256];       /* the first such frame, for the message */
};

static bool is_startup_frame(const struct pf_frame *frame)
{
	static const char *const prefixes[] = {
		"_start", "__libc_start", "Py_BytesMain", "Py_RunMain", "Py_Main", "pymain_", "_PyRun_", "PyRun_",
		"run_mod", "run_eval_code_obj",
	};

	if (frame->kind != PF_FRAME_NATIVE || !frame->name)
		return false;
	if (strcmp(frame->name, "main") == 0 || strcmp(frame->name, "PyEval_EvalCode") == 0)
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (strncmp(frame->name, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

static void note_deep_cut(void *findings, const struct pf_sample *sample)
{
	struct deep_cut_findings *found = findings;
	const struct pf_frame *leaf = python_leaf(sample);
	size_t leaf_at, startup = 0, native_below = 0;

	if (!leaf || strcmp(leaf->name, "bottom_deep") != 0)
		return;
	leaf_at = (size_t)(leaf - sample->frames);
	found->deep_samples++;
	found->marked_at_root += sample->frames[0].kind == PF_FRAME_INVALID;
	for (size_t f = 0; f < sample->frame_count; f++) {
		startup += is_startup_frame(&sample->frames[f]);
		native_below += f < leaf_at && sample->frames[f].kind == PF_FRAME_NATIVE;
	}
	found->startup_frames += startup > 0;
	found->native_below_leaf += native_below > 0;
	for (size_t f = 0; f < sample->frame_count && (startup || native_below) && !found->example[0]; f++)
		if (is_startup_frame(&sample->frames[f]) || (f < leaf_at && sample->frames[f].kind == PF_FRAME_NATIVE))
			FORMAT(found->example, "%s at frame %zu of %zu, the Python leaf at %zu", sample->frames[f].name,
			       f, sample->frame_count, leaf_at);
}

static void native_deep_recursion_cut_at_root(void **state)
{
	static const char *const labels[] = { "2.7", "3.11", "3.11-static", "3.12", "3.13", "3.14", "3.15" };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(labels); i++) {
		const struct test_python *python = native_python(labels[i]);
		struct deep_cut_findings found = { 0 }, in_tachyon = { 0 };
		char extra[PATH_MAX + 8], tachyon[PATH_MAX];
		struct native_run run, tachyon_run;

		if (!python)
			continue;
		FORMAT(tachyon, "%s/deep-cut-%s.bin", test_tmpdir(), python->label);
		FORMAT(extra, "-o %s", tachyon);
		record_native_script_or_fail(python, extra, WORKLOAD, "deep", &run);
		read_native_run(&run, note_deep_cut, &found);
		if (!walked(python->label, &run))
			continue;
		memset(&tachyon_run, 0, sizeof(tachyon_run));
		FORMAT(tachyon_run.path, "%s", tachyon);
		read_native_run(&tachyon_run, note_deep_cut, &in_tachyon);
		print_message("%s: %zu deep samples: %zu cut and marked at the root, %zu with start-up frames, %zu with "
			      "native frames below the leaf%s%s; Tachyon: %zu with start-up frames; %lu of %zu samples' "
			      "merges disagreed\n",
			      python->label, found.deep_samples, found.marked_at_root, found.startup_frames,
			      found.native_below_leaf, found.example[0] ? ", e.g. " : "", found.example,
			      in_tachyon.startup_frames, run.merge_failures, run.samples);
		assert_true(found.deep_samples >= 50);
		assert_int_equal(found.marked_at_root, found.deep_samples);
		/* Pure Python recursion: every native frame of the sample lies above its Python leaf. */
		assert_int_equal(found.native_below_leaf, 0);
		assert_int_equal(found.startup_frames, 0);
		assert_int_equal(in_tachyon.deep_samples, found.deep_samples);
		assert_int_equal(in_tachyon.startup_frames, 0);
		assert_true(run.merge_failures * 100 <= run.samples);
	}
}

/*
 * The record ring follows the records seen: sized for 2 KiB ones at first (1 MiB on a few CPUs),
 * which held 60 ms of 900-frame records at 1 kHz, and lost 8% of them beside two busy processes.
 * The workload's deep phase (1024 frames kept, some 17 KiB a record) must leave a ring that holds
 * RING_HOLD_MS (100 ms) of them at the rate on one CPU at least: 2 MiB.
 */
static void deep_stacks_grow_the_ring(void **state)
{
	const struct test_python *python = native_python("3.12");
	struct native_run run;

	(void)state;
	if (!python)
		skip();
	record_native_script_or_fail(python, "-F 1000", WORKLOAD, "deep", &run);
	read_native_run(&run, ignore_sample, NULL);
	print_message("%s: deep phase: ring buffer %lu KiB\n%s", python->label, run.ring_bytes >> 10, run.summary);
	assert_true(run.ring_bytes >= 2ul << 20);
}

/* b. ctypes qsort with a Python comparator: Python -> libffi -> qsort -> Python. */
static void note_qsort(void *findings, const struct pf_sample *sample)
{
	qsort_chain_note(sample, findings);
}

static void native_qsort_callback(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(native_labels); i++) {
		const struct test_python *python = native_python(native_labels[i]);
		struct qsort_chain found = { 0 };
		struct native_run run;

		if (!python)
			continue;
		record_native_script_or_fail(python, "", "native_qsort_callback.py", "2", &run);
		read_native_run(&run, note_qsort, &found);
		if (!walked(python->label, &run))
			continue;
		print_message("%s: %zu of %zu comparator samples show caller;ffi_call;qsort;comparator; "
			      "%.1f%% of %lu walks reached the root (stops '%s'); %lu merges disagreed\n",
			      python->label, found.whole_chain, found.compare_samples, 100.0 * run.root_share, run.walks,
			      run.stops, run.merge_failures);
		assert_true(found.compare_samples >= 200);
		assert_true(found.whole_chain * 2 >= found.compare_samples);
	}
}

/* c. sorted() with a Python key: the interpreter's C sort between the caller and the key. */
struct sorted_findings {
	size_t key_samples;      /* samples in the key function */
	size_t sort_between;     /* ... with builtin_sorted / list_sort_impl between the caller and the key */
	size_t only_native_between; /* ... with the caller below the key and nothing but native frames between */
	size_t calls_between;    /* ... with the interpreter's call machinery (PyObject_Vectorcall, ...) between */
};

/* The interpreter's own C functions that only pass a call on: hidden by default. */
static bool is_call_machinery(const struct pf_frame *frame)
{
	return frame->kind == PF_FRAME_NATIVE && frame->name &&
	       (strcasestr(frame->name, "vectorcall") || strstr(frame->name, "PyObject_Call"));
}

static void note_sorted(void *findings, const struct pf_sample *sample)
{
	struct sorted_findings *found = findings;
	size_t caller = named_after(sample, 0, PF_FRAME_PYTHON, "sort_with_key");
	size_t key = named_after(sample, caller, PF_FRAME_PYTHON, "sort_key");
	size_t sort = named_after(sample, caller, PF_FRAME_NATIVE, "builtin_sorted");
	bool only_native = key != NO_FRAME, calls = false;

	if (named_after(sample, 0, PF_FRAME_PYTHON, "sort_key") == NO_FRAME)
		return;
	found->key_samples++;
	if (sort == NO_FRAME)
		sort = named_after(sample, caller, PF_FRAME_NATIVE, "list_sort");
	found->sort_between += key != NO_FRAME && sort < key;
	for (size_t f = caller + 1; only_native && f < key; f++) {
		only_native = sample->frames[f].kind == PF_FRAME_NATIVE;
		calls |= is_call_machinery(&sample->frames[f]);
	}
	found->only_native_between += only_native;
	found->calls_between += calls;
}

static void native_sorted_key(void **state)
{
	static const char *const labels[] = { "2.7", "3.8", "3.11", "3.11-static", "3.12", "3.13", "3.14", "3.15" };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(labels); i++) {
		const struct test_python *python = native_python(labels[i]);
		struct sorted_findings found = { 0 };
		struct native_run run;
		/* pyenv builds keep their symbols; Debian's export only the API (no builtin_sorted) */
		bool has_symbols;

		if (!python)
			continue;
		has_symbols = strcmp(python->kind, "pyenv") == 0;
		record_native_script_or_fail(python, "", "native_sorted_key.py", "2", &run);
		read_native_run(&run, note_sorted, &found);
		if (!walked(python->label, &run))
			continue;
		print_message("%s: %zu key samples: %zu with the C sort between caller and key, %zu with only native "
			      "frames between, %zu with call machinery between; %lu of %zu samples' merges disagreed\n",
			      python->label, found.key_samples, found.sort_between, found.only_native_between,
			      found.calls_between, run.merge_failures, run.samples);
		assert_true(found.key_samples >= 500);
		assert_true(found.only_native_between * 10 >= found.key_samples * 9);
		if (has_symbols)
			assert_true(found.sort_between * 10 >= found.key_samples * 9);
		/* The interpreter's own frames that only pass the call on are left out by default, whether
		 * it is a libpython or the executable itself. */
		assert_true(found.calls_between * 20 <= found.key_samples);
		assert_true(run.merge_failures * 50 <= run.samples);
	}
}

/* d. Reading /dev/zero: kernel frames on libc's read on the Python frame, in one stack. */
struct read_findings {
	size_t reader_samples;
	size_t whole_chain; /* Python reader, then libc's read, then the kernel's read path */
};

static void note_read_zero(void *findings, const struct pf_sample *sample)
{
	struct read_findings *found = findings;
	size_t reader = named_after(sample, 0, PF_FRAME_PYTHON, "bpf_read_zero");
	size_t libc_read = NO_FRAME, kernel;

	if (reader == NO_FRAME)
		return;
	found->reader_samples++;
	for (size_t f = reader; f < sample->frame_count; f++) {
		if (sample->frames[f].kind == PF_FRAME_NATIVE && strstr(sample->frames[f].file, "/libc.so") &&
		    strstr(sample->frames[f].name, "read")) {
			libc_read = f;
			break;
		}
	}
	kernel = named_after(sample, libc_read, PF_FRAME_KERNEL, "read_zero");
	if (kernel == NO_FRAME)
		kernel = named_after(sample, libc_read, PF_FRAME_KERNEL, "vfs_read");
	found->whole_chain += kernel != NO_FRAME;
}

static void native_read_zero(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(native_labels); i++) {
		const struct test_python *python = native_python(native_labels[i]);
		struct read_findings found = { 0 };
		struct native_run run;

		if (!python)
			continue;
		record_native_script_or_fail(python, "", "bpf_read_zero.py", "2", &run);
		read_native_run(&run, note_read_zero, &found);
		if (!walked(python->label, &run))
			continue;
		print_message("%s: %zu of %zu reader samples show reader;libc read;kernel read path\n", python->label,
			      found.whole_chain, found.reader_samples);
		assert_true(found.reader_samples >= 500);
		assert_true(found.whole_chain * 2 >= found.reader_samples);
	}
}

/* e. Code the unwinder cannot follow: the walk says why, the Python and kernel frames stay. */
struct odd_findings {
	const char *spinner;     /* the Python function that runs the odd code */
	size_t spin_samples;     /* samples with that function */
	size_t with_kernel;      /* ... and kernel frames above it */
};

static void note_odd(void *findings, const struct pf_sample *sample)
{
	struct odd_findings *found = findings;
	size_t spinner = named_after(sample, 0, PF_FRAME_PYTHON, found->spinner);

	if (spinner == NO_FRAME)
		return;
	found->spin_samples++;
	found->with_kernel += count_kind(sample, PF_FRAME_KERNEL) > 0 &&
			      sample->frames[sample->frame_count - 1].kind == PF_FRAME_KERNEL;
}

static void native_odd_code(void **state)
{
	static const struct {
		const char *phase, *spinner, *stop;
	} cases[] = {
		{ "anonymous", "spin_in_anonymous_code", "no_mapping=" },
		{ "deleted", "spin_in_deleted_library", "deleted_file=" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(native_labels); i++) {
		const struct test_python *python = native_python(native_labels[i]);

		for (size_t c = 0; python && c < ARRAY_SIZE(cases); c++) {
			struct odd_findings found = { .spinner = cases[c].spinner };
			struct native_run run;
			char args[32];

			FORMAT(args, "%s 2", cases[c].phase);
			record_native_script_or_fail(python, "", "native_odd_code.py", args, &run);
			read_native_run(&run, note_odd, &found);
			if (!walked(python->label, &run))
				break;
			print_message("%s: %s: %zu of %zu samples in %s, %zu of them with kernel frames; stops '%s'\n",
				      python->label, cases[c].phase, found.spin_samples, run.samples, cases[c].spinner,
				      found.with_kernel, run.stops);
			assert_true(found.spin_samples * 10 >= run.samples * 7);
			/* In the sid chroot (no /proc/self/fd) the copy is unlinked only after dlopen mapped
			 * it: a profiler that read the maps in between built its table, rightly, and then
			 * the walks go through the library to the root. */
			if (strcmp(cases[c].phase, "deleted") == 0 && strcmp(python->kind, "chroot") == 0 &&
			    !strstr(run.stops, cases[c].stop)) {
				print_message("%s: the library's table was built before it was unlinked; %.1f%% of walks "
					      "reached the root\n",
					      python->label, 100.0 * run.root_share);
				assert_true(run.root_share >= 0.9);
				continue;
			}
			assert_non_null(strstr(run.stops, cases[c].stop));
			/* the anonymous code calls getpid on every turn: some samples land in the kernel */
			if (strcmp(cases[c].phase, "anonymous") == 0)
				assert_true(found.with_kernel * 10 >= found.spin_samples);
		}
	}
}

/* g. A stripped library whose static function is named only by its MiniDebugInfo (as Fedora ships). */
struct minidebuginfo_findings {
	size_t in_library;   /* samples whose leaf is in the library */
	size_t named;        /* ... named hidden_loop */
	char other[128];     /* the first other name such a leaf had, for the message */
};

static void note_minidebuginfo(void *findings, const struct pf_sample *sample)
{
	struct minidebuginfo_findings *found = findings;
	const struct pf_frame *leaf = sample->frame_count ? &sample->frames[sample->frame_count - 1] : NULL;

	if (!leaf || leaf->kind != PF_FRAME_NATIVE || !strstr(leaf->file, "/libminidebuginfo.so"))
		return;
	found->in_library++;
	if (strcmp(leaf->name, "hidden_loop") == 0)
		found->named++;
	else if (!found->other[0])
		snprintf(found->other, sizeof(found->other), "%s", leaf->name);
}

static void native_minidebuginfo(void **state)
{
	static const char source[] =
		"static __attribute__((noinline)) unsigned long hidden_loop(unsigned long n)\n"
		"{ unsigned long total = 0; for (unsigned long i = 0; i < n; i++) total += (i * i) ^ (total >> 3);"
		" return total; }\n"
		"unsigned long call_hidden(unsigned long n) { return hidden_loop(n); }\n";
	const struct test_python *python = native_python("3.12");
	struct minidebuginfo_findings found = { 0 };
	char dir[PATH_MAX], path[PATH_MAX + 32], command[4 * PATH_MAX], args[PATH_MAX + 32];
	struct native_run run;

	(void)state;
	if (!python)
		return;
	FORMAT(dir, "%s/minidebuginfo", test_tmpdir());
	FORMAT(path, "%s/hidden.c", dir);
	FORMAT(command, "mkdir -p %s", dir);
	assert_int_equal(system(command), 0);
	assert_int_equal(write_whole_file(path, source, sizeof(source) - 1), 0);
	/* the recipe of Fedora's find-debuginfo, for one static function */
	FORMAT(command,
	       "set -e; cd %s; cc -shared -fPIC -O1 -o libminidebuginfo.so hidden.c; "
	       "objcopy --only-keep-debug libminidebuginfo.so full.debug; "
	       "objcopy -S --remove-section .comment --keep-symbol=hidden_loop full.debug mini; xz -f mini; "
	       "strip -s libminidebuginfo.so; objcopy --add-section .gnu_debugdata=mini.xz libminidebuginfo.so",
	       dir);
	assert_int_equal(system(command), 0);
	FORMAT(args, "%s/libminidebuginfo.so 2", dir);
	record_native_script_or_fail(python, "", "native_minidebuginfo.py", args, &run);
	read_native_run(&run, note_minidebuginfo, &found);
	print_message("%s: %zu of %zu samples in the library, %zu of them named hidden_loop (another: '%s')\n",
		      python->label, found.in_library, run.samples, found.named, found.other);
	assert_true(found.in_library * 2 >= run.samples);
	assert_true(found.named * 10 >= found.in_library * 9);
}

/* f. numpy: its own C/C++ code and the BLAS above the Python function that called them. */
struct numpy_findings {
	size_t matmul_samples, matmul_with_numpy_and_blas;
	size_t sort_samples, sort_with_numpy;
	char matmul_example[512], sort_example[512];
};

/* The native frames of a sample from index from, "a;b;c", into out. */
static void native_names(const struct pf_sample *sample, size_t from, char *out, size_t len)
{
	size_t used = 0;

	out[0] = 0;
	for (size_t f = from; f < sample->frame_count && used < len; f++)
		if (sample->frames[f].kind == PF_FRAME_NATIVE)
			used += (size_t)snprintf(out + used, len - used, "%s%s", used ? ";" : "", sample->frames[f].name);
}

static void note_numpy(void *findings, const struct pf_sample *sample)
{
	struct numpy_findings *found = findings;
	size_t matmul = named_after(sample, 0, PF_FRAME_PYTHON, "numpy_matmul");
	size_t sort = named_after(sample, 0, PF_FRAME_PYTHON, "numpy_sort");

	if (named_after(sample, 0, PF_FRAME_PYTHON, "warm_up") != NO_FRAME)
		return;
	if (matmul != NO_FRAME) {
		size_t numpy = in_file_after(sample, matmul, PF_FRAME_NATIVE, "_multiarray_umath");
		bool both = in_file_after(sample, numpy, PF_FRAME_NATIVE, "blas") != NO_FRAME;

		found->matmul_samples++;
		found->matmul_with_numpy_and_blas += both;
		if (both && !found->matmul_example[0])
			native_names(sample, numpy, found->matmul_example, sizeof(found->matmul_example));
	}
	if (sort != NO_FRAME) {
		size_t numpy = in_file_after(sample, sort, PF_FRAME_NATIVE, "_multiarray_umath");

		found->sort_samples++;
		found->sort_with_numpy += numpy != NO_FRAME;
		if (numpy != NO_FRAME && !found->sort_example[0])
			native_names(sample, numpy, found->sort_example, sizeof(found->sort_example));
	}
}

static void native_numpy(void **state)
{
	/* Debian's numpy: bookworm's for its python3.11 (DEB_PACKAGES), sid's if the chroot has it */
	static const char *const labels[] = { "3.11-static", "3.14" };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(labels); i++) {
		const struct test_python *python = native_python(labels[i]);
		struct numpy_findings found = { 0 };
		struct native_run run;

		if (!python)
			continue;
		record_native_script(python, "", "native_numpy.py", "1.5", &run);
		if (run.status != 0 && strstr(run.summary, "No module named")) {
			print_message("%s: numpy is not installed for it; skipped\n", python->label);
			continue;
		}
		if (run.status != 0)
			fail_msg("%s: pybpfprof exited %d: %s", python->label, run.status, run.summary);
		read_native_run(&run, note_numpy, &found);
		if (!walked(python->label, &run))
			continue;
		print_message("%s: matrix product: %zu of %zu samples with numpy's and the BLAS's frames (e.g. %s); "
			      "sort: %zu of %zu with numpy's (e.g. %s); %.1f%% of walks reached the root (stops '%s')\n",
			      python->label, found.matmul_with_numpy_and_blas, found.matmul_samples, found.matmul_example,
			      found.sort_with_numpy, found.sort_samples, found.sort_example, 100.0 * run.root_share,
			      run.stops);
		assert_true(found.matmul_samples >= 500);
		assert_true(found.sort_samples >= 500);
		assert_true(found.matmul_with_numpy_and_blas * 2 >= found.matmul_samples);
		assert_true(found.sort_with_numpy * 2 >= found.sort_samples);
	}
}

/* h. A busy host: two CPU-bound processes beside the target, which gets a third of a CPU. */
#define HOG_COUNT 2
/* A hog ends by itself this long after it starts, whatever becomes of the test. */
#define HOG_MAX_S 60

static void start_hogs(pid_t *hogs)
{
	for (size_t i = 0; i < HOG_COUNT; i++) {
		hogs[i] = fork();
		assert_true(hogs[i] >= 0);
		if (hogs[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			alarm(HOG_MAX_S);
			for (volatile unsigned long spin = 0;; spin++)
				;
		}
	}
}

static void stop_hogs(pid_t *hogs)
{
	for (size_t i = 0; i < HOG_COUNT; i++) {
		kill(hogs[i], SIGKILL);
		waitpid(hogs[i], NULL, 0);
	}
}

struct zlib_chain_findings {
	const char *caller;   /* the Python function that calls zlib.compress */
	size_t zlib_samples;  /* samples under caller whose leaf is in libz, below deflate */
	size_t whole_chain;   /* ... with deflate between caller and the leaf */
};

static void note_zlib_chain(void *findings, const struct pf_sample *sample)
{
	struct zlib_chain_findings *found = findings;
	const struct pf_frame *leaf = sample->frame_count ? &sample->frames[sample->frame_count - 1] : NULL;
	size_t caller = named_after(sample, 0, PF_FRAME_PYTHON, found->caller);
	size_t deflate;

	/* A leaf in deflate itself would show deflate with or without a table. */
	if (caller == NO_FRAME || !leaf || leaf->kind != PF_FRAME_NATIVE || !leaf->file ||
	    !strstr(leaf->file, "/libz.so") || (leaf->name && strcmp(leaf->name, "deflate") == 0))
		return;
	found->zlib_samples++;
	for (deflate = caller + 1; deflate + 1 < sample->frame_count; deflate++)
		if (sample->frames[deflate].kind == PF_FRAME_NATIVE && sample->frames[deflate].name &&
		    strcmp(sample->frames[deflate].name, "deflate") == 0)
			break;
	found->whole_chain += deflate + 1 < sample->frame_count;
}

/* The zlib workload launched under the profiler for 4 s while the hogs run. */
static void record_launched_under_load(const struct test_python *python, struct native_run *run)
{
	pid_t hogs[HOG_COUNT];

	start_hogs(hogs);
	record_native_script(python, "-d 4", "native_work.py", "6", run);
	stop_hogs(hogs);
	if (run->status != 0)
		fail_msg("%s: pybpfprof exited %d: %s", python->label, run->status, run->summary);
}

/* The zlib workload, already running, attached to for 4 s while the hogs run. */
static void record_attached_under_load(const struct test_python *python, struct native_run *run)
{
	char pid_text[16];
	pid_t hogs[HOG_COUNT], target;
	int out_fd;

	memset(run, 0, sizeof(*run));
	FORMAT(run->path, "%s/busy-attach-%s.mojo", test_tmpdir(), python->label);
	target = test_start_ready_script(python, "bpf_native_zlib.py", "", &out_fd);
	FORMAT(pid_text, "%d", (int)target);
	start_hogs(hogs);
	{
		char *argv[] = { (char *)pybpfprof_binary(), "-d", "4", "-p", pid_text, "-o", run->path, NULL };

		run->status = run_capture(argv, run->summary, sizeof(run->summary));
	}
	stop_hogs(hogs);
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
	close(out_fd);
	if (run->status != 0)
		fail_msg("%s: pybpfprof -p exited %d: %s", python->label, run->status, run->summary);
}

static void check_zlib_chain(const char *how, const struct test_python *python, struct native_run *run,
			     const char *caller)
{
	struct zlib_chain_findings found = { .caller = caller };

	read_native_run(run, note_zlib_chain, &found);
	print_message("%s %s beside %d CPU hogs: %zu of %zu zlib samples hold the chain under %s; walks stopped: '%s'\n",
		      python->label, how, HOG_COUNT, found.whole_chain, found.zlib_samples, caller, run->stops);
	assert_true(found.zlib_samples >= 50);
	assert_true(found.whole_chain * 10 >= found.zlib_samples * 9);
}

/*
 * Native frames do not depend on how busy the host is: the unwind tables come before the
 * samples that need them, launched or attached, so zlib's deflate sits between the Python
 * function that called it and the leaf as on a quiet host.
 */
static void native_frames_on_a_busy_host(void **state)
{
	static const char *const labels[] = { "3.11-static", "3.12", "3.15" };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(labels); i++) {
		const struct test_python *python = native_python(labels[i]);
		struct native_run run;

		if (!python)
			continue;
		record_launched_under_load(python, &run);
		check_zlib_chain("launched", python, &run, "compress_loop");
		record_attached_under_load(python, &run);
		check_zlib_chain("attached", python, &run, "compress_once");
	}
}

/*
 * A zlib sample whose native walk went on past its leaf: under the Python caller, native frames
 * only, at least two (libz's callers of the leaf, and the zlib module's function where the merge
 * shows it). Told by frames, not names: a file whose symbols are still being read names its
 * frames by offset for a while, which says nothing about the walk. A walk that lost its native
 * frames holds the leaf alone. A leaf in deflate itself may have no libz caller: not counted.
 */
static void note_zlib_unwound(void *findings, const struct pf_sample *sample)
{
	struct zlib_chain_findings *found = findings;
	const struct pf_frame *leaf = sample->frame_count ? &sample->frames[sample->frame_count - 1] : NULL;
	size_t caller = named_after(sample, 0, PF_FRAME_PYTHON, found->caller);

	if (caller == NO_FRAME || !leaf || leaf->kind != PF_FRAME_NATIVE || !leaf->file ||
	    !strstr(leaf->file, "/libz.so") || (leaf->name && strcmp(leaf->name, "deflate") == 0))
		return;
	found->zlib_samples++;
	for (size_t i = caller + 1; i < sample->frame_count; i++)
		if (sample->frames[i].kind != PF_FRAME_NATIVE)
			return;
	found->whole_chain += sample->frame_count - caller - 1 >= 2;
}

/* The -v summary's late-unwinding line: copies BPF sent, received, unwound late, lost native frames. */
struct late_counts {
	unsigned long copies, received, unwound, lost;
};

static void read_late_counts(const char *label, const char *summary, struct late_counts *late)
{
	const char *line = strstr(summary, " stack copies from BPF, ");

	/* back to the line's start: "late unwinding: N stack copies from BPF, ..." */
	while (line && line > summary && line[-1] != '\n')
		line--;
	line = line ? strstr(line, "late unwinding: ") : NULL;
	if (!line || sscanf(line, "late unwinding: %lu stack copies from BPF, %lu received; %lu samples unwound late",
			    &late->copies, &late->received, &late->unwound) != 3)
		fail_msg("%s: no late-unwinding line in the -v summary: %s", label, summary);
	line = strstr(line, " lost native frames");
	/* the number right before it */
	while (line && line > summary && line[-1] >= '0' && line[-1] <= '9')
		line--;
	if (!line || sscanf(line, "%lu", &late->lost) != 1)
		fail_msg("%s: no count of samples that lost native frames: %s", label, summary);
	/* Every copy received was either unwound or lost, and none came that BPF did not send. */
	assert_int_equal(late->received, late->unwound + late->lost);
	assert_true(late->received <= late->copies);
}

/* Each thread's time stamps as a file holds them: how many went back. */
struct thread_clock {
	uint64_t keys[64][2]; /* pid, tid */
	uint64_t last_us[64];
	size_t count;
	size_t samples, went_back;
};

static void note_thread_time(void *findings, const struct pf_sample *sample)
{
	struct thread_clock *clock = findings;
	size_t i;

	clock->samples++;
	for (i = 0; i < clock->count; i++)
		if (clock->keys[i][0] == sample->pid && clock->keys[i][1] == sample->tid)
			break;
	if (i == clock->count) {
		if (clock->count == ARRAY_SIZE(clock->keys))
			return;
		clock->keys[i][0] = sample->pid;
		clock->keys[i][1] = sample->tid;
		clock->last_us[i] = 0;
		clock->count++;
	}
	clock->went_back += sample->timestamp_us < clock->last_us[i];
	clock->last_us[i] = sample->timestamp_us;
}

/* The at-once workload through an exec'ing wrapper: the profiler prebuilds tables for sh only.
 * A Tachyon file too (tachyon_path), whose samples carry their time stamps. */
static void record_through_exec_wrapper(const struct test_python *python, struct native_run *run,
					char *tachyon_path, size_t tachyon_len)
{
	char command[PATH_MAX + 64], script[PATH_MAX];
	char *argv[] = { (char *)pybpfprof_binary(), "-v", "-o", run->path, "-o", tachyon_path, "--", "sh", "-c",
			 command, NULL };

	memset(run, 0, sizeof(*run));
	FORMAT(run->path, "%s/exec-wrapper-%s.mojo", test_tmpdir(), python->label);
	snprintf(tachyon_path, tachyon_len, "%s/exec-wrapper-%s.bin", test_tmpdir(), python->label);
	script_path(script, sizeof(script), "native_zlib_at_once.py");
	FORMAT(command, "exec %s %s 0.5", python->command, script);
	run->status = run_capture(argv, run->summary, sizeof(run->summary));
	if (run->status != 0)
		fail_msg("%s: pybpfprof exited %d: %s", python->label, run->status, run->summary);
}

/* The whole host, with the at-once workload started after the profiler: nothing prebuilt. */
static void record_whole_host_later_start(const struct test_python *python, struct native_run *run)
{
	char script[PATH_MAX], err_path[PATH_MAX];
	/* Long enough for the workload beside a busy host's others (its CPU second takes longer). */
	char *argv[] = { (char *)pybpfprof_binary(), "-v", "-d", "5", "-o", run->path, NULL };
	char command[PATH_MAX + 64], *workload[32];
	uint8_t *text;
	const char *late;
	size_t len = 0;
	pid_t profiler;

	memset(run, 0, sizeof(*run));
	FORMAT(run->path, "%s/host-later-%s.mojo", test_tmpdir(), python->label);
	FORMAT(err_path, "%s/host-later-%s.err", test_tmpdir(), python->label);
	script_path(script, sizeof(script), "native_zlib_at_once.py");
	profiler = test_spawn(argv, NULL, err_path);
	assert_true(profiler > 0);
	/* The profiler is running before the workload starts (its start is not what is measured). */
	usleep(800 * 1000);
	/* A CPU second: a whole host's discovery of a new process may take a moment under load. */
	FORMAT(command, "%s %s 1", python->command, script);
	split_command(command, workload, 32);
	assert_int_equal(test_wait_status(test_spawn(workload, NULL, NULL)), 0);
	run->status = test_wait_status(profiler);
	text = read_whole_file(err_path, &len);
	/* A whole host's -v summary is long: from the late-unwinding lines on, when it is kept. */
	late = text && run->status == 0 ? strstr((char *)text, "pybpfprof: late unwinding: ") : NULL;
	FORMAT(run->summary, "%s", late ? late : text ? (char *)text : "");
	free(text);
	if (run->status != 0)
		fail_msg("%s: pybpfprof exited %d: %s", python->label, run->status, run->summary);
}

/*
 * A process whose files have no tables yet when it is first sampled (run through `sh -c 'exec
 * python ...'`, or started after a whole-host profiler) still gets its native frames: BPF sends
 * the stack with the samples its walk could not finish and userspace unwinds them once the
 * tables exist, so zlib's deflate sits between the Python caller and the leaf from the start.
 */
static void native_frames_while_tables_build(void **state)
{
	static const char *const labels[] = { "3.11-static", "3.12", "3.15" };
	unsigned long unwound_late = 0;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(labels); i++) {
		const struct test_python *python = native_python(labels[i]);
		struct native_run run;
		struct late_counts late;

		if (!python)
			continue;
		for (int mode = 0; mode < 2; mode++) {
			struct zlib_chain_findings found = { .caller = "compress_at_once" };
			const char *how = mode == 0 ? "through sh -c exec" : "started after a whole-host profiler";

			if (mode == 0) {
				struct native_run timed = { 0 };
				struct thread_clock clock = { 0 };

				record_through_exec_wrapper(python, &run, timed.path, sizeof(timed.path));
				/* Held samples leave in the order they came: no thread's clock goes back. */
				read_native_run(&timed, note_thread_time, &clock);
				assert_true(clock.samples >= 50);
				assert_int_equal(clock.went_back, 0);
			} else {
				record_whole_host_later_start(python, &run);
			}
			read_native_run(&run, note_zlib_unwound, &found);
			read_late_counts(python->label, run.summary, &late);
			print_message("%s %s: %zu of %zu zlib samples hold the chain; %lu stack copies, %lu unwound late, "
				      "%lu lost native frames\n",
				      python->label, how, found.whole_chain, found.zlib_samples, late.copies, late.unwound,
				      late.lost);
			if (found.zlib_samples < 50 || found.whole_chain * 10 < found.zlib_samples * 9)
				print_message("the profiler said:\n%s\n", run.summary); /* the losses by cause */
			assert_true(found.zlib_samples >= 50);
			assert_true(found.whole_chain * 10 >= found.zlib_samples * 9);
			unwound_late += late.unwound;
		}
	}
	/* The whole-host runs start with no table of the workload's files at all. */
	assert_true(unwound_late > 0);
}

/* g. An independent unwinder: perf's DWARF call graphs of the zlib workload show the same heavy paths. */

#define PATHS_MAX 512
#define NAMES_MAX 256

/* Call paths (root to leaf, ";"-joined) and how many samples each. */
struct path_counts {
	char paths[PATHS_MAX][320];
	size_t counts[PATHS_MAX];
	size_t count, total;
	size_t cut; /* samples with comparable frames, none of them deflate */
};

struct name_set {
	char names[NAMES_MAX][128];
	size_t count;
};

static bool name_set_has(const struct name_set *set, const char *name)
{
	for (size_t i = 0; i < set->count; i++)
		if (strcmp(set->names[i], name) == 0)
			return true;
	return false;
}

static void name_set_add(struct name_set *set, const char *name)
{
	if (set->count < NAMES_MAX && !name_set_has(set, name))
		FORMAT(set->names[set->count++], "%s", name);
}

static void path_counts_add(struct path_counts *list, const char *path)
{
	if (!*path)
		return;
	list->total++;
	for (size_t i = 0; i < list->count; i++) {
		if (strcmp(list->paths[i], path) == 0) {
			list->counts[i]++;
			return;
		}
	}
	if (list->count < PATHS_MAX) {
		FORMAT(list->paths[list->count], "%s", path);
		list->counts[list->count++] = 1;
	}
}

/* The index of the heaviest path not yet taken, or NO_FRAME. */
static size_t heaviest_left(const struct path_counts *list, const bool *taken)
{
	size_t best = NO_FRAME;

	for (size_t i = 0; i < list->count; i++)
		if (!taken[i] && (best == NO_FRAME || list->counts[i] > list->counts[best]))
			best = i;
	return best;
}

/* Frames both tools can name, in libz, libc or the zlib module: a function's name, or for a function
 * no symbol names, "[libz.so.1.2.13+0x5d80]" (the file offset of its start, as pybpfprof names it). */
static bool comparable_frame(const char *name, const char *file)
{
	return name && file && name[0] && strncmp(name, "0x", 2) != 0 && strcmp(name, "[unknown]") != 0 &&
	       (strstr(file, "/libz.so") || strstr(file, "/libc.so") || strstr(file, "zlib"));
}

/* The functions of one file, for naming perf's "[unknown]" frames as pybpfprof names them. */
struct file_functions {
	char path[PATH_MAX];
	struct unwind_function_range *ranges;
	size_t count;
	uint64_t text_addr, text_offset; /* the executable segment: link-time address and file offset */
};

static void file_functions_load(struct file_functions *file, const char *path)
{
	struct errbuf error;
	Elf *elf;
	size_t headers = 0;
	int fd = open(path, O_RDONLY);

	FORMAT(file->path, "%s", path);
	if (fd < 0)
		return;
	if (unwind_table_function_starts(fd, &file->ranges, &file->count, &error) < 0)
		file->count = 0;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	for (size_t i = 0; elf && elf_getphdrnum(elf, &headers) == 0 && i < headers; i++) {
		GElf_Phdr header;

		if (gelf_getphdr(elf, (int)i, &header) && header.p_type == PT_LOAD && (header.p_flags & PF_X)) {
			file->text_addr = header.p_vaddr;
			file->text_offset = header.p_offset;
			break;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
}

/* "[base+0xOFFSET]" for the function of file that holds link-time address addr; false if none. */
static bool function_start_name(const char *path, uint64_t addr, char *out, size_t len)
{
	static struct file_functions files[8];
	static size_t file_count;
	struct file_functions *file = NULL;
	const struct unwind_function_range *range;

	for (size_t i = 0; i < file_count && !file; i++)
		if (strcmp(files[i].path, path) == 0)
			file = &files[i];
	if (!file) {
		if (file_count == ARRAY_SIZE(files))
			return false;
		file = &files[file_count++];
		file_functions_load(file, path);
	}
	range = array_last_at_or_below_u64(file->ranges, file->count, sizeof(*file->ranges),
					   offsetof(struct unwind_function_range, start), addr);
	if (!range || addr >= range->end || range->start < file->text_addr)
		return false;
	snprintf(out, len, "[%s+0x%" PRIx64 "]", strrchr(path, '/') + 1,
		 range->start - file->text_addr + file->text_offset);
	return true;
}

/* One sample's comparable frames root to leaf: names[] (pointers into the caller's storage). */
struct frame_names {
	const char *names[128];
	size_t count;
};

typedef void (*stack_visit)(void *context, const struct frame_names *stack);

/* Where a stack goes: into the name set (first pass), or as a path of the names both tools saw. */
struct path_pass {
	struct name_set *seen;        /* first pass: every comparable name */
	const struct name_set *both;  /* second pass: only these names make the path */
	struct path_counts *paths;
};

/* Only stacks through deflate, the entry into libz, are compared: a walk that stopped short of it
 * (libz is loaded mid-run, and its pcs cannot be unwound until its mapping is known) is not. */
static bool through_deflate(const struct frame_names *stack)
{
	for (size_t i = 0; i < stack->count; i++)
		if (strcmp(stack->names[i], "deflate") == 0)
			return true;
	return false;
}

static void pass_stack(void *context, const struct frame_names *stack)
{
	struct path_pass *pass = context;
	char path[320];
	size_t used = 0;

	/* The names both tools show in the stacks compared: a name one tool shows only elsewhere
	 * (libc's __libc_start_call_main, named by both once libc's debug file is installed, which
	 * pybpfprof leaves out below the first Python frame) says nothing about those paths. */
	if (pass->seen) {
		for (size_t i = 0; through_deflate(stack) && i < stack->count; i++)
			name_set_add(pass->seen, stack->names[i]);
		return;
	}
	path[0] = 0;
	if (!through_deflate(stack)) {
		pass->paths->cut += stack->count > 0;
		return;
	}
	for (size_t i = 0; i < stack->count && used < sizeof(path); i++)
		if (name_set_has(pass->both, stack->names[i]))
			used += (size_t)snprintf(path + used, sizeof(path) - used, "%s%s", used ? ";" : "",
						 stack->names[i]);
	path_counts_add(pass->paths, path);
}

static void our_stacks(const char *profile, stack_visit visit, void *context)
{
	struct pf_reader *reader;
	struct pf_sample sample;
	char err[512];

	assert_int_equal(format_registry_open_reader(&reader, profile, err, sizeof(err)), 0);
	while (pf_reader_next_sample(reader, &sample) > 0) {
		struct frame_names stack = { .count = 0 };

		for (size_t f = 0; f < sample.frame_count && stack.count < ARRAY_SIZE(stack.names); f++)
			if (sample.frames[f].kind == PF_FRAME_NATIVE &&
			    comparable_frame(sample.frames[f].name, sample.frames[f].file))
				stack.names[stack.count++] = sample.frames[f].name;
		visit(context, &stack);
	}
	pf_reader_close(reader);
}

/* perf script's "\t  6a3b deflateReset (/usr/lib/x86_64-linux-gnu/libz.so.1.2.13)": the name and file,
 * cut in place (an "[unknown]" named by its function's start into unnamed); false for an inlined frame
 * (perf repeats its pc; we name the function that holds it). */
static bool perf_frame(char *line, char *unnamed, size_t unnamed_len, const char **name, const char **file)
{
	char *cursor = line, *open_paren, *close_paren;
	uint64_t addr;

	while (*cursor == ' ' || *cursor == '\t')
		cursor++;
	addr = strtoull(cursor, &cursor, 16);
	while (*cursor == ' ')
		cursor++;
	open_paren = strrchr(cursor, '(');
	close_paren = open_paren ? strrchr(open_paren, ')') : NULL;
	if (!open_paren || !close_paren || open_paren == cursor)
		return false;
	open_paren[-1] = 0;
	*close_paren = 0;
	*name = cursor;
	*file = open_paren + 1;
	/* perf prints a library's pcs as link-time addresses */
	if (strcmp(*name, "[unknown]") == 0 && (*file)[0] == '/' &&
	    function_start_name(*file, addr, unnamed, unnamed_len))
		*name = unnamed;
	return strcmp(*file, "inlined") != 0;
}

/* perf script's samples of the python process, as stacks of comparable names (perf lists them leaf first). */
static void perf_stacks(const char *script_text_path, stack_visit visit, void *context)
{
	static char lines[256][512], unnamed[256][128];
	FILE *text = fopen(script_text_path, "r");
	char line[512];
	size_t depth = 0;
	bool in_python = false;

	assert_non_null(text);
	for (bool more = true; more;) {
		more = fgets(line, sizeof(line), text) != NULL;
		if (more && (line[0] == ' ' || line[0] == '\t')) {
			if (in_python && depth < ARRAY_SIZE(lines))
				FORMAT(lines[depth++], "%s", line);
			continue;
		}
		if (in_python) {
			struct frame_names stack = { .count = 0 };

			for (size_t i = depth; i-- > 0;) {
				const char *name, *file;

				if (perf_frame(lines[i], unnamed[i], sizeof(unnamed[i]), &name, &file) &&
				    comparable_frame(name, file) &&
				    stack.count < ARRAY_SIZE(stack.names))
					stack.names[stack.count++] = name;
			}
			visit(context, &stack);
		}
		depth = 0;
		in_python = more && strncmp(line, "python", 6) == 0;
	}
	fclose(text);
}

static void print_heaviest(const char *who, const struct path_counts *paths, size_t limit)
{
	bool taken[PATHS_MAX] = { false };

	print_message("%s: %zu samples through deflate (%zu with comparable frames, not through it), %zu paths; "
		      "heaviest:\n", who, paths->total, paths->cut, paths->count);
	for (size_t n = 0; n < limit; n++) {
		size_t i = heaviest_left(paths, taken);

		if (i == NO_FRAME)
			break;
		taken[i] = true;
		print_message("  %5.1f%% %s\n", 100.0 * (double)paths->counts[i] / (double)paths->total, paths->paths[i]);
	}
}

/* Each of the 10 heaviest paths of one (of at least 2% of its samples) is a path of the other. */
static size_t heavy_paths_missing(const struct path_counts *from, const struct path_counts *in, const char *who)
{
	bool taken[PATHS_MAX] = { false };
	size_t missing = 0;

	for (size_t n = 0; n < 10; n++) {
		size_t i = heaviest_left(from, taken), j;

		if (i == NO_FRAME || from->counts[i] * 50 < from->total)
			break;
		taken[i] = true;
		for (j = 0; j < in->count && strcmp(in->paths[j], from->paths[i]) != 0; j++)
			;
		if (j == in->count) {
			print_message("  heavy path only %s: %s\n", who, from->paths[i]);
			missing++;
		}
	}
	return missing;
}

static bool perf_can_sample(char *reason, size_t len)
{
	char data[PATH_MAX], err[4096];
	char *argv[] = { "perf", "record", "-q", "-e", "cpu-clock", "-o", data, "--", "true", NULL };
	int status;

	FORMAT(data, "%s/perf-probe.data", test_tmpdir());
	status = run_capture(argv, err, sizeof(err));
	unlink(data);
	if (status != 0)
		snprintf(reason, len, "perf record -e cpu-clock fails here (exit %d): %.200s", status, err);
	return status == 0;
}

static void native_paths_match_perf(void **state)
{
	static const char *const labels[] = { "3.12", "3.11-static" };
	char reason[512];

	(void)state;
	if (!perf_can_sample(reason, sizeof(reason))) {
		print_message("%s; skipped\n", reason);
		skip();
	}
	for (size_t i = 0; i < ARRAY_SIZE(labels); i++) {
		const struct test_python *python = native_python(labels[i]);
		static struct name_set ours_seen, perf_seen, both;
		static struct path_counts our_paths, perf_paths;
		char command[2048], script[PATH_MAX], data[PATH_MAX], text[PATH_MAX];
		struct path_pass pass;
		struct native_run run;

		if (!python)
			continue;
		record_native_script_or_fail(python, "", "native_work.py", "1.5", &run);
		FORMAT(data, "%s/perf-%s.data", test_tmpdir(), python->label);
		FORMAT(text, "%s/perf-%s.txt", test_tmpdir(), python->label);
		script_path(script, sizeof(script), "native_work.py");
		FORMAT(command, "perf record -q -e cpu-clock -F 999 --call-graph dwarf -o %s -- %s %s 1.5 >/dev/null 2>&1 && "
		       "perf script -i %s -F comm,ip,sym,dso > %s 2>/dev/null", data, python->command, script, data, text);
		assert_int_equal(system(command), 0);
		memset(&ours_seen, 0, sizeof(ours_seen));
		memset(&perf_seen, 0, sizeof(perf_seen));
		memset(&both, 0, sizeof(both));
		memset(&our_paths, 0, sizeof(our_paths));
		memset(&perf_paths, 0, sizeof(perf_paths));
		pass = (struct path_pass){ .seen = &ours_seen };
		our_stacks(run.path, pass_stack, &pass);
		pass = (struct path_pass){ .seen = &perf_seen };
		perf_stacks(text, pass_stack, &pass);
		for (size_t n = 0; n < ours_seen.count; n++)
			if (name_set_has(&perf_seen, ours_seen.names[n]))
				name_set_add(&both, ours_seen.names[n]);
		pass = (struct path_pass){ .both = &both, .paths = &our_paths };
		our_stacks(run.path, pass_stack, &pass);
		pass = (struct path_pass){ .both = &both, .paths = &perf_paths };
		perf_stacks(text, pass_stack, &pass);
		print_message("%s: %zu function names both show (of %zu ours, %zu perf's)\n", python->label, both.count,
			      ours_seen.count, perf_seen.count);
		print_heaviest("pybpfprof", &our_paths, 10);
		print_heaviest("perf", &perf_paths, 10);
		assert_true(our_paths.total >= 500 && perf_paths.total >= 500);
		assert_int_equal(heavy_paths_missing(&our_paths, &perf_paths, "in pybpfprof"), 0);
		assert_int_equal(heavy_paths_missing(&perf_paths, &our_paths, "in perf"), 0);
		unlink(data);
	}
}

/* ---- launch: the command gets the invoking user's identity, none of our capabilities ---- */

int main(void)
{
	struct CMUnitTest tests[64];
	size_t count = 0;

	/* TEST_FILTER=forked_* runs the matching tests only (these take minutes in all). */
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	python_count = test_pythons(pythons, MAX_PYTHONS);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(native_leaf_frames_name_c_code);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(native_stacks_mixed);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(native_walks_reach_the_root);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(native_deep_recursion_cut_at_root);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(deep_stacks_grow_the_ring);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(native_qsort_callback);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(native_sorted_key);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(native_read_zero);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(native_odd_code);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(native_minidebuginfo);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(native_numpy);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(native_paths_match_perf);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(native_frames_on_a_busy_host);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(native_frames_while_tables_build);
	return _cmocka_run_group_tests("record_native", tests, count, NULL, NULL);
}
