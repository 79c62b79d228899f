// SPDX-License-Identifier: MIT
/*
 * `pybpfprof record` end to end, as a user runs it: real interpreters under the
 * real BPF sampler (root), files read back with our readers. For every
 * interpreter on the machine: a 3:1 split shows in the right proportions
 * with the right files and lines, a 500-frame recursion appears whole, a
 * 1500-frame one is cut at the root and marked, 4 threads each show their
 * own function, and reading /dev/zero shows the kernel's read path under
 * the Python frame that called it. Attached (-p) and launched runs, a run
 * interrupted or killed, the whole host, forked children and module bodies.
 */
#include "record_run.h"

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
#define SPLIT_EXPECTED 0.75
#define SPLIT_TOLERANCE 0.03
/* A worker's share of the four: the CPU a thread spends taking the GIL is not always under its
 * Python frame, up to 3 points off a quarter on 2.7 under load; a worker missing 40% of its
 * samples is over 8 off. */
#define WORKER_SHARE_TOLERANCE 0.08

/* Every supported interpreter (pyenv, Debian's static 3.11, the sid chroot); one absent is skipped,
 * and says so. */
static const char *const wanted_labels[] = {
	"2.7", "3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13",
	"3.11-static", "3.14", "3.15",
};

static struct test_python pythons[MAX_PYTHONS];
static size_t python_count;

static const struct test_python *find_python(const char *label)
{
	return test_python_find(pythons, python_count, label);
}

/* Line numbers of the script carrying a marker comment (e.g. "# heavy-body"). */
static size_t marked_lines(const char *marker, int *lines, size_t max)
{
	char path[PATH_MAX], text[512];
	size_t count = 0;
	int number = 0;
	FILE *file;

	script_path(path, sizeof(path), WORKLOAD);
	file = fopen(path, "r");
	assert_non_null(file);
	while (fgets(text, sizeof(text), file) && count < max) {
		number++;
		if (strstr(text, marker))
			lines[count++] = number;
	}
	fclose(file);
	return count;
}

static bool line_is_marked(int line, const int *lines, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (lines[i] == line)
			return true;
	return false;
}

static bool ends_with(const char *text, const char *suffix)
{
	size_t len = strlen(text), suffix_len = strlen(suffix);

	return len >= suffix_len && strcmp(text + len - suffix_len, suffix) == 0;
}

/* ---- what one workload profile must show ---- */

struct workload_findings {
	size_t samples;
	size_t heavy, light;
	size_t heavy_wrong_place, light_wrong_place;
	size_t recursion_samples, recursion_whole;
	size_t deep_samples, deep_cut_and_marked;
	uint64_t worker_tid[4];
	size_t worker_samples[4];
	size_t worker_tid_conflicts;
	size_t read_samples, read_with_kernel_read_path, read_kernel_before_python;
};

static void note_split(struct workload_findings *found, const struct pf_sample *sample,
		       const int *heavy_lines, size_t heavy_count, const int *light_lines,
		       size_t light_count)
{
	const struct pf_frame *leaf = python_leaf(sample);

	if (!leaf || !count_named(sample, "phase_split"))
		return;
	if (strcmp(leaf->name, "heavy") == 0) {
		found->heavy++;
		if (!ends_with(leaf->file, WORKLOAD) ||
		    !line_is_marked(leaf->line, heavy_lines, heavy_count))
			found->heavy_wrong_place++;
	} else if (strcmp(leaf->name, "light") == 0) {
		found->light++;
		if (!ends_with(leaf->file, WORKLOAD) ||
		    !line_is_marked(leaf->line, light_lines, light_count))
			found->light_wrong_place++;
	}
}

static void note_recursion(struct workload_findings *found, const struct pf_sample *sample)
{
	const struct pf_frame *leaf = python_leaf(sample);

	if (!leaf)
		return;
	if (strcmp(leaf->name, "bottom") == 0) {
		found->recursion_samples++;
		/* Whole: all 500 levels and the module frame at the root, no cut marker. */
		if (count_named(sample, "recurse") == 500 && sample->frames[0].kind == PF_FRAME_PYTHON &&
		    strcmp(sample->frames[0].name, "<module>") == 0)
			found->recursion_whole++;
	} else if (strcmp(leaf->name, "bottom_deep") == 0) {
		found->deep_samples++;
		if (sample->frames[0].kind == PF_FRAME_INVALID &&
		    count_kind(sample, PF_FRAME_PYTHON) == 1024)
			found->deep_cut_and_marked++;
	}
}

static void note_threads(struct workload_findings *found, const struct pf_sample *sample)
{
	static const char *const workers[4] = { "worker_0", "worker_1", "worker_2", "worker_3" };

	for (int w = 0; w < 4; w++) {
		if (!count_named(sample, workers[w]))
			continue;
		if (found->worker_samples[w] == 0)
			found->worker_tid[w] = sample->tid;
		else if (found->worker_tid[w] != sample->tid)
			found->worker_tid_conflicts++;
		found->worker_samples[w]++;
	}
}

static void note_read(struct workload_findings *found, const struct pf_sample *sample)
{
	const struct pf_frame *leaf = python_leaf(sample);
	bool kernel_read = false, kernel_seen = false, python_after_kernel = false;

	if (!leaf || strcmp(leaf->name, "read_zero") != 0)
		return;
	found->read_samples++;
	for (size_t i = 0; i < sample->frame_count; i++) {
		const struct pf_frame *frame = &sample->frames[i];

		if (frame->kind == PF_FRAME_KERNEL) {
			kernel_seen = true;
			if (strstr(frame->name, "vfs_read") || strstr(frame->name, "ksys_read"))
				kernel_read = true;
		} else if (frame->kind == PF_FRAME_PYTHON && kernel_seen) {
			python_after_kernel = true;
		}
	}
	found->read_with_kernel_read_path += kernel_read;
	found->read_kernel_before_python += python_after_kernel;
}

static void analyse_workload(const char *path, struct workload_findings *found)
{
	int heavy_lines[8], light_lines[8];
	size_t heavy_count = marked_lines("# heavy-body", heavy_lines, 8);
	size_t light_count = marked_lines("# light-body", light_lines, 8);
	struct pf_reader *reader;
	struct pf_sample sample;
	char err[512];
	int got;

	memset(found, 0, sizeof(*found));
	assert_int_equal(format_registry_open_reader(&reader, path, err, sizeof(err)), 0);
	while ((got = pf_reader_next_sample(reader, &sample)) > 0) {
		found->samples++;
		note_split(found, &sample, heavy_lines, heavy_count, light_lines, light_count);
		note_recursion(found, &sample);
		note_threads(found, &sample);
		note_read(found, &sample);
	}
	if (got < 0)
		fail_msg("%s: %s", path, pf_reader_error(reader));
	pf_reader_close(reader);
}

static void assert_dump_accepts(const char *path)
{
	char *argv[] = { (char *)pybpfprof_binary(), "dump", (char *)path, NULL };
	char err[4096];
	int devnull = open("/dev/null", O_WRONLY), saved = dup(1);
	int status;

	/* The dump's text goes nowhere; its exit status and stderr are what we check. */
	dup2(devnull, 1);
	status = run_capture(argv, err, sizeof(err));
	dup2(saved, 1);
	close(saved);
	close(devnull);
	if (status != 0)
		fail_msg("pybpfprof dump %s: exit %d: %s", path, status, err);
}

/* The heavy share the workload measured itself ("split-truth HEAVY LIGHT" on its stderr, CPU
 * seconds), else the 3:1 its iterations make. */
static double true_heavy_share(const char *output)
{
	const char *line = strstr(output, "split-truth ");
	double heavy = 0, light = 0;

	if (line && sscanf(line, "split-truth %lf %lf", &heavy, &light) == 2 && heavy + light > 0)
		return heavy / (heavy + light);
	return SPLIT_EXPECTED;
}

static void check_workload_findings(const char *label, const char *path,
				    const struct workload_findings *found, double expected_share)
{
	double heavy_share = (double)found->heavy / (double)(found->heavy + found->light);

	print_message("%s: %s: %zu samples; split %zu:%zu (%.1f%% heavy, %.1f%% measured by the workload); recursion %zu/%zu whole; "
		      "deep %zu/%zu cut; workers %zu %zu %zu %zu; read %zu, %zu with kernel read path\n",
		      label, path, found->samples, found->heavy, found->light, 100 * heavy_share,
		      100 * expected_share, found->recursion_whole, found->recursion_samples, found->deep_cut_and_marked,
		      found->deep_samples, found->worker_samples[0], found->worker_samples[1],
		      found->worker_samples[2], found->worker_samples[3], found->read_samples,
		      found->read_with_kernel_read_path);
	/* 2.5 s of the split at 1 kHz: enough samples for +-3 points to be meaningful. */
	assert_true(found->heavy + found->light >= 800);
	assert_true(fabs(heavy_share - expected_share) <= SPLIT_TOLERANCE);
	assert_int_equal(found->heavy_wrong_place, 0);
	assert_int_equal(found->light_wrong_place, 0);
	assert_true(found->recursion_samples >= 100);
	assert_int_equal(found->recursion_whole, found->recursion_samples);
	assert_true(found->deep_samples >= 50);
	assert_int_equal(found->deep_cut_and_marked, found->deep_samples);
	/* Each worker runs until its own thread has spent 0.2 s of CPU (tests/scripts/workload.py),
	 * so each is a quarter of the four: about 200 samples at 1 kHz. */
	size_t worker_total = found->worker_samples[0] + found->worker_samples[1] + found->worker_samples[2] +
			      found->worker_samples[3];
	assert_true(worker_total >= 400);
	for (int w = 0; w < 4; w++) {
		double share = (double)found->worker_samples[w] / (double)worker_total;

		if (fabs(share - 0.25) > WORKER_SHARE_TOLERANCE)
			fail_msg("%s: worker_%d has %.1f%% of the workers' samples, not 25%%", label, w, 100 * share);
		for (int other = 0; other < w; other++)
			assert_true(found->worker_tid[w] != found->worker_tid[other]);
	}
	assert_int_equal(found->worker_tid_conflicts, 0);
	assert_true(found->read_samples >= 50);
	/* Most reads are sampled inside the syscall, under the Python frame. */
	assert_true(found->read_with_kernel_read_path * 2 >= found->read_samples);
	assert_int_equal(found->read_kernel_before_python, 0);
}

static void profile_workload(void **state)
{
	const char *label = *state;
	const struct test_python *python = find_python(label);
	char command[1200], script[PATH_MAX], mojo[PATH_MAX], tachyon[PATH_MAX], err[4096];
	char *argv[32];
	struct workload_findings from_mojo, from_tachyon;
	int argc, status;

	if (!python) {
		print_message("%s is absent on this machine (3.14/3.15: run 'make pythons'); skipped\n",
			      label);
		skip();
	}
	FORMAT(mojo, "%s/workload-%s.mojo", test_tmpdir(), label);
	FORMAT(tachyon, "%s/workload-%s.bin", test_tmpdir(), label);
	script_path(script, sizeof(script), WORKLOAD);
	FORMAT(command, "%s -q -F 1000 -o %s -o %s -- %s %s", pybpfprof_binary(),
		 mojo, tachyon, python->command, script);
	argc = split_command(command, argv, 32);
	assert_true(argc > 6);
	status = run_capture(argv, err, sizeof(err));
	if (status != 0)
		fail_msg("%s: pybpfprof exited %d: %s", label, status, err);
	analyse_workload(mojo, &from_mojo);
	check_workload_findings(label, "mojo", &from_mojo, true_heavy_share(err));
	/* Tachyon keeps the innermost 256 frames: whole-stack checks apply to MOJO only. */
	analyse_workload(tachyon, &from_tachyon);
	assert_int_equal(from_tachyon.samples, from_mojo.samples);
	assert_int_equal(from_tachyon.heavy, from_mojo.heavy);
	assert_int_equal(from_tachyon.light, from_mojo.light);
	assert_int_equal(from_tachyon.read_with_kernel_read_path, from_mojo.read_with_kernel_read_path);
	assert_dump_accepts(mojo);
	assert_dump_accepts(tachyon);
	assert_cpython_accepts(tachyon, from_tachyon.samples);
}

/* ---- attach, exit status, signals ---- */

static void attach_by_pid(void **state)
{
	struct running_python target;
	char pid_text[16], mojo[PATH_MAX], tachyon[PATH_MAX], err[4096];
	size_t heavy;
	uint64_t cpu_ms;

	(void)state;
	start_spinner(&target, pythons, python_count, "split split");
	FORMAT(pid_text, "%d", (int)target.pid);
	FORMAT(mojo, "%s/attach.mojo", test_tmpdir());
	FORMAT(tachyon, "%s/attach.bin", test_tmpdir());
	{
		char *argv[] = { (char *)pybpfprof_binary(), "-q", "-p", pid_text, "-d", "1.5",
				 "-o", mojo, "-o", tachyon, NULL };
		uint64_t cpu_before = test_cpu_ms(target.pid);
		int status = run_capture(argv, err, sizeof(err));

		cpu_ms = test_cpu_ms(target.pid) - cpu_before;
		stop_spinner(&target);
		if (status != 0)
			fail_msg("pybpfprof -p: exit %d: %s", status, err);
	}
	heavy = count_samples_of(mojo, (uint32_t)target.pid, "heavy", err, sizeof(err));
	assert_string_equal(err, "");
	assert_heavy_for_cpu("attach", heavy, cpu_ms, 4);
	assert_int_equal(count_samples_of(tachyon, 0, "heavy", err, sizeof(err)), heavy);
	assert_string_equal(err, "");
}

static void launch_passes_exit_status(void **state)
{
	const struct test_python *python = find_python("3.12");
	char command[1400], out[PATH_MAX], err[4096];
	char *argv[32];

	(void)state;
	if (!python)
		skip();
	FORMAT(out, "%s/exit.mojo", test_tmpdir());
	FORMAT(command, "%s -q -o %s -- %s -c import\\ sys;sys.exit(7)",
		 pybpfprof_binary(), out, python->command);
	split_command(command, argv, 32);
	/* split_command has no quoting: put the -c program back together. */
	for (int i = 0; argv[i]; i++)
		if (strcmp(argv[i], "-c") == 0 && argv[i + 1]) {
			argv[i + 1] = "import sys; sys.exit(7)";
			argv[i + 2] = NULL;
			break;
		}
	assert_int_equal(run_capture(argv, err, sizeof(err)), 7);
	count_samples_of(out, 0, NULL, err, sizeof(err));
	assert_string_equal(err, "");
}

static void interrupted_run_leaves_valid_files(void **state)
{
	struct running_python target;
	char pid_text[16], mojo[PATH_MAX], tachyon[PATH_MAX], err_path[PATH_MAX], err[512];
	int signals[] = { SIGINT, SIGTERM };

	(void)state;
	start_spinner(&target, pythons, python_count, "split split split");
	FORMAT(pid_text, "%d", (int)target.pid);
	FORMAT(err_path, "%s/signal.err", test_tmpdir());
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
		char *argv[] = { (char *)pybpfprof_binary(), "-q", "-p", pid_text, "-o", mojo,
				 "-o", tachyon, NULL };
		pid_t profiler;
		uint64_t cpu_before, cpu_ms;
		size_t heavy;

		FORMAT(mojo, "%s/signal-%d.mojo", test_tmpdir(), signals[i]);
		FORMAT(tachyon, "%s/signal-%d.bin", test_tmpdir(), signals[i]);
		unlink(mojo);
		profiler = test_spawn(argv, NULL, err_path);
		/* the samples to expect: from when sampling runs (the file has some), for 1.5 s */
		wait_for_heavy_samples(mojo);
		cpu_before = test_cpu_ms(target.pid);
		usleep(1500 * 1000);
		kill(profiler, signals[i]);
		assert_int_equal(test_wait_status(profiler), 0);
		cpu_ms = test_cpu_ms(target.pid) - cpu_before;
		heavy = count_samples_of(mojo, 0, "heavy", err, sizeof(err));
		assert_string_equal(err, "");
		assert_heavy_for_cpu(strsignal(signals[i]), heavy, cpu_ms, 4);
		assert_int_equal(count_samples_of(tachyon, 0, "heavy", err, sizeof(err)), heavy);
		assert_string_equal(err, "");
	}
	stop_spinner(&target);
}

/* SIGKILL cannot be caught: what was flushed (each second) must still read. */
static void killed_run_leaves_readable_files(void **state)
{
	struct running_python target;
	char pid_text[16], mojo[PATH_MAX], tachyon[PATH_MAX], err[512];
	pid_t profiler;
	size_t mojo_heavy, tachyon_heavy;
	uint64_t cpu_before, cpu_ms;

	(void)state;
	start_spinner(&target, pythons, python_count, "split split split");
	FORMAT(pid_text, "%d", (int)target.pid);
	FORMAT(mojo, "%s/killed.mojo", test_tmpdir());
	FORMAT(tachyon, "%s/killed.bin", test_tmpdir());
	{
		char *argv[] = { (char *)pybpfprof_binary(), "-q", "-p", pid_text, "-o", mojo,
				 "-o", tachyon, NULL };

		profiler = test_spawn(argv, NULL, NULL);
	}
	/* from when sampling runs (a flush has samples), however long start-up took */
	wait_for_heavy_samples(mojo);
	cpu_before = test_cpu_ms(target.pid);
	usleep(3500 * 1000);
	kill(profiler, SIGKILL);
	test_wait_status(profiler);
	cpu_ms = test_cpu_ms(target.pid) - cpu_before;
	stop_spinner(&target);
	/* A MOJO file may end inside a sample: every complete one before it counts. What was flushed
	 * (each second) is at least the run but its last second. */
	cpu_ms = cpu_ms * 5 / 7;
	mojo_heavy = count_samples_of(mojo, 0, "heavy", err, sizeof(err));
	assert_heavy_for_cpu("killed, MOJO", mojo_heavy, cpu_ms, 4);
	tachyon_heavy = count_samples_of(tachyon, 0, "heavy", err, sizeof(err));
	assert_string_equal(err, "");
	assert_heavy_for_cpu("killed, Tachyon", tachyon_heavy, cpu_ms, 4);
}

/* No target: every Python process, including one that starts after the profiler. */
static void system_wide_finds_later_processes(void **state)
{
	struct running_python before, later;
	char out[PATH_MAX], err[512], err_path[PATH_MAX];
	char *argv[] = { (char *)pybpfprof_binary(), "-q", "-o", out, NULL };
	pid_t profiler;
	uint64_t before_cpu_ms, later_cpu_ms;
	size_t heavy;

	(void)state;
	FORMAT(out, "%s/system.mojo", test_tmpdir());
	FORMAT(err_path, "%s/system.err", test_tmpdir());
	start_spinner(&before, pythons, python_count, "split split");
	profiler = test_spawn(argv, NULL, err_path);
	/* The spinners' CPU is counted while the profiler samples: from its first sample (its
	 * whole-host start-up, however long a busy machine makes it, comes before) to before it is
	 * stopped (its end, which writes the files, after). */
	wait_for_heavy_samples(out);
	before_cpu_ms = test_cpu_ms(before.pid);
	start_spinner(&later, pythons, python_count, "split split");
	later_cpu_ms = test_cpu_ms(later.pid);
	sleep(2);
	before_cpu_ms = test_cpu_ms(before.pid) - before_cpu_ms;
	later_cpu_ms = test_cpu_ms(later.pid) - later_cpu_ms;
	kill(profiler, SIGINT);
	assert_int_equal(test_wait_status(profiler), 0);
	stop_spinner(&before);
	stop_spinner(&later);
	/* One sample per 8 ms: the later process is found while it runs, not at its start (a
	 * whole-host run looks at every new process). */
	heavy = count_samples_of(out, (uint32_t)before.pid, "heavy", err, sizeof(err));
	assert_string_equal(err, "");
	assert_heavy_for_cpu("running before", heavy, before_cpu_ms, 8);
	heavy = count_samples_of(out, (uint32_t)later.pid, "heavy", err, sizeof(err));
	assert_string_equal(err, "");
	assert_heavy_for_cpu("started later", heavy, later_cpu_ms, 8);
}

/* Launch mode follows fork(): each child is sampled with its own stack and pid. */
static void forked_children_are_profiled(void **state)
{
	static const char *const labels[] = { "2.7", "3.12" };

	(void)state;
	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
		const struct test_python *python = find_python(labels[i]);
		char command[1400], script[PATH_MAX], out[PATH_MAX], err[4096];
		uint32_t child_pids[8] = { 0 }, parent_pid = 0;
		size_t child_count = 0, parent_samples = 0, child_samples = 0, unnamed_samples = 0;
		uint32_t unnamed_pid = 0;
		struct pf_reader *reader;
		struct pf_sample sample;
		char *argv[32];
		int status;

		if (!python) {
			print_message("%s is absent on this machine; skipped\n", labels[i]);
			continue;
		}
		script_path(script, sizeof(script), "fork_children.py");
		FORMAT(out, "%s/fork-%s.mojo", test_tmpdir(), labels[i]);
		FORMAT(command, "%s -q -o %s -- %s %s", pybpfprof_binary(), out, python->command, script);
		split_command(command, argv, 32);
		status = run_capture(argv, err, sizeof(err));
		if (status != 0)
			fail_msg("%s: pybpfprof exited %d: %s", labels[i], status, err);
		assert_int_equal(format_registry_open_reader(&reader, out, err, sizeof(err)), 0);
		while (pf_reader_next_sample(reader, &sample) > 0) {
			if (count_named(&sample, "parent_spin")) {
				if (!parent_pid)
					parent_pid = sample.pid;
				assert_int_equal(sample.pid, parent_pid);
				parent_samples++;
			} else if (count_named(&sample, "child_spin")) {
				bool known = false;

				for (size_t c = 0; c < child_count; c++)
					known |= child_pids[c] == sample.pid;
				if (!known && child_count < 8)
					child_pids[child_count++] = sample.pid;
				child_samples++;
			} else if (count_kind(&sample, PF_FRAME_PYTHON) == 0) {
				unnamed_pid = sample.pid;
				unnamed_samples++;
			}
		}
		pf_reader_close(reader);
		print_message("%s: parent %u: %zu samples; %zu children: %zu samples\n", labels[i],
			      parent_pid, parent_samples, child_count, child_samples);
		assert_true(parent_samples >= 200);
		if (child_count != 2)
			fail_msg("%s: %zu children seen; %zu samples without Python frames (last from pid %u)",
				 labels[i], child_count, unnamed_samples, unnamed_pid);
		assert_true(child_samples >= 400);
		for (size_t c = 0; c < child_count; c++)
			assert_true(child_pids[c] != parent_pid);
	}
}

/* Startup: module bodies are freed when their import ends, yet each one is named. */
static void imported_module_bodies_are_named(void **state)
{
	(void)state;
	for (size_t i = 0; i < python_count; i++) {
		const struct test_python *python = &pythons[i];
		char command[1400], script[PATH_MAX], out[PATH_MAX], err[4096];
		struct module_bodies found;
		char *argv[32];
		int status;

		script_path(script, sizeof(script), "import_modules.py");
		FORMAT(out, "%s/imports-%s.mojo", test_tmpdir(), python->label);
		FORMAT(command, "%s -q -o %s -- %s %s", pybpfprof_binary(), out, python->command, script);
		split_command(command, argv, 32);
		status = run_capture(argv, err, sizeof(err));
		if (status != 0)
			fail_msg("%s: pybpfprof exited %d: %s", python->label, status, err);
		count_module_bodies(out, 0, python->label, &found);
		/* About 8 samples a body: a body is missed only if every one of its samples is. */
		assert_true(found.named >= 18);
		assert_true(found.unresolved_samples * 10 <= found.samples + found.unresolved_samples);
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
	for (size_t i = 0; i < sizeof(wanted_labels) / sizeof(wanted_labels[0]); i++) {
		static char names[16][64];

		FORMAT(names[i], "workload_%s", wanted_labels[i]);
		tests[count++] = (struct CMUnitTest){ .name = names[i], .test_func = profile_workload,
						      .initial_state = (void *)wanted_labels[i] };
	}
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(attach_by_pid);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(launch_passes_exit_status);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(interrupted_run_leaves_valid_files);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(killed_run_leaves_readable_files);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(system_wide_finds_later_processes);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(forked_children_are_profiled);
	tests[count++] = (struct CMUnitTest)cmocka_unit_test(imported_module_bodies_are_named);
	return _cmocka_run_group_tests("record", tests, count, NULL, NULL);
}
