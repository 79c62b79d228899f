// SPDX-License-Identifier: MIT
/*
 * The SVG flame graph in a real browser: the writer draws a known profile,
 * tests/scripts/flamegraph_browser.py opens it in headless Chromium (Debian's
 * chromium, chromium-driver and python3-selenium, installed by `make deps`; no
 * network) and uses it: hover, click to zoom, Reset Zoom, search through the
 * prompt. It prints what it saw; this test judges it. Skipped, saying why,
 * when the browser is not installed.
 */
#include "formats/format_registry.h"
#include "profile/profile.h"
#include "testlib.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define BROWSER_SCRIPT "tests/scripts/flamegraph_browser.py"
#define SYSTEM_PYTHON  "/usr/bin/python3" /* Debian's: python3-selenium is installed for it */
#define BROWSER_TIMEOUT "180"

static struct pf_frame python_frame(const char *file, const char *name, int32_t line)
{
	return (struct pf_frame){ .kind = PF_FRAME_PYTHON, .file = file, .name = name, .line = line,
				  .end_line = line, .column = -1, .end_column = -1, .opcode = -1 };
}

static void add_sample(struct pf_writer *writer, uint32_t pid, const struct pf_frame *frames,
		       size_t count)
{
	struct pf_sample sample = { .pid = pid, .tid = pid, .metrics = PF_METRIC_TIME, .time_us = 1000,
				    .frame_count = count, .frames = frames };

	assert_int_equal(pf_writer_add_sample(writer, &sample), 0);
}

/*
 * Two processes, 5 ms: pid 100 spends 3 ms in save&load and 1 ms in cold ->
 * PyObject_Vectorcall -> do_syscall_64 under main; pid 200 1 ms in idle. A
 * long subtitle, so the legend's row is tested against a wide text.
 */
static void write_known_profile(const char *path)
{
	struct pf_frame hot[3] = { python_frame("app.py", "<module>", 1),
				   python_frame("app.py", "main", 10),
				   python_frame("app.py", "save&load", 20) };
	struct pf_frame cold[5] = { python_frame("app.py", "<module>", 1),
				    python_frame("app.py", "main", 11),
				    python_frame("app.py", "cold", 30),
				    pf_frame_unlocated(PF_FRAME_NATIVE, "libpython3.12.so",
						       "PyObject_Vectorcall"),
				    pf_frame_unlocated(PF_FRAME_KERNEL, "", "do_syscall_64") };
	struct pf_frame idle[2] = { python_frame("other.py", "<module>", 1),
				    python_frame("other.py", "idle", 7) };
	struct pf_writer *writer = NULL;

	assert_int_equal(pf_writer_open(&writer, path, format_registry_find_name("svg"), NULL), 0);
	assert_int_equal(pf_writer_set_metadata(writer, "python",
						"3.12.1 (main, Jan  1 2026, 00:00:00) [GCC 12.2.0]"),
			 0);
	assert_int_equal(pf_writer_set_metadata(writer, "mode", "wall"), 0);
	assert_int_equal(pf_writer_set_metadata(writer, "interval", "1000"), 0);
	for (int i = 0; i < 3; i++) {
		hot[2].line = 20 + i;
		add_sample(writer, 100, hot, 3);
	}
	add_sample(writer, 100, cold, 5);
	add_sample(writer, 200, idle, 2);
	assert_int_equal(pf_writer_set_metadata(writer, "duration", "5000"), 0);
	assert_int_equal(pf_writer_close(writer), 0);
}

/* Why the browser cannot run here, or NULL when it can. */
static const char *browser_missing(void)
{
	if (access("/usr/lib/chromium/chromium", X_OK))
		return "chromium is not installed (make deps)";
	if (access("/usr/bin/chromedriver", X_OK))
		return "chromium-driver is not installed (make deps)";
	if (access("/usr/lib/python3/dist-packages/selenium", F_OK))
		return "python3-selenium is not installed (make deps)";
	return NULL;
}

/* Runs the browser script on svg with its output in out_path; its exit status. */
static int run_browser(const char *svg, const char *out_path)
{
	char *const argv[] = { "timeout", BROWSER_TIMEOUT, SYSTEM_PYTHON, BROWSER_SCRIPT,
			       (char *)svg, "cold", "main", "save&load", "save", NULL };
	int status = 0;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
			_exit(127);
		execv("/usr/bin/timeout", argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The value the script printed for key (its first "key<TAB>value" line), or NULL. */
static char *reported(const char *output, const char *key)
{
	size_t key_len = strlen(key);

	for (const char *line = output; *line;) {
		const char *end = strchr(line, '\n');

		if (!end)
			end = line + strlen(line);
		if ((size_t)(end - line) > key_len && !strncmp(line, key, key_len) &&
		    line[key_len] == '\t')
			return strndup(line + key_len + 1, (size_t)(end - line) - key_len - 1);
		line = *end ? end + 1 : end;
	}
	return NULL;
}

static void assert_reported(const char *output, const char *key, const char *expected)
{
	char *value = reported(output, key);
	char seen[256];

	snprintf(seen, sizeof(seen), "%s", value ? value : "(nothing)");
	if (!value || strcmp(value, expected)) {
		free(value);
		fail_msg("%s: saw \"%s\", wanted \"%s\"", key, seen, expected);
	}
	free(value);
}

static double reported_number(const char *output, const char *key)
{
	char *value = reported(output, key);
	double number;

	if (!value)
		fail_msg("%s: nothing reported", key);
	number = strtod(value, NULL);
	free(value);
	return number;
}

static void test_renders_zooms_and_searches(void **state)
{
	const char *missing = browser_missing();
	char svg[512], out_path[512];
	size_t len = 0;
	char *output;
	int status;

	if (missing) {
		printf("skipped: %s\n", missing);
		skip();
	}
	snprintf(svg, sizeof(svg), "%s/known.svg", test_tmpdir());
	snprintf(out_path, sizeof(out_path), "%s/browser.out", test_tmpdir());
	write_known_profile(svg);
	status = run_browser(svg, out_path);
	output = (char *)read_whole_file(out_path, &len);
	assert_non_null(output);
	*state = output; /* freed by the teardown, whatever fails */
	printf("%s", output); /* what the browser saw, for a failure's reader */
	assert_int_equal(status, 0);
	assert_null(reported(output, "driver_error"));

	/* It renders, its script ran and raised nothing. */
	assert_reported(output, "hooked", "yes");
	assert_reported(output, "errors", "0");
	/* all, 2 processes, 2 x <module>, main, cold, save&load, native, kernel, idle. */
	assert_reported(output, "frames", "11");
	/* Hovering shows the tooltip, lines and all. */
	assert_reported(output, "hover_details", "cold (app.py:30): 1.00 ms, 20.00%");
	/* A click on cold zooms to it: the whole width, its callers faded, others gone. */
	assert_true(reported_number(output, "zoom_x") == 10);
	assert_true(reported_number(output, "zoom_width") == 1180);
	assert_reported(output, "zoom_unzoom_display", "block");
	assert_reported(output, "zoom_outside_display", "none");
	assert_reported(output, "zoom_parent_opacity", "0.5");
	/* On screen the legend meets no text and no frame. */
	assert_reported(output, "overlaps", "0");
	/* Reset Zoom brings cold back to its 20%. */
	assert_true(reported_number(output, "reset_width") == 236);
	/* Searching "save" highlights save&load only: 3 of 5 ms. */
	assert_reported(output, "search_hits", "1");
	assert_reported(output, "matched", "Matched: 60.0%");
	{
		char *highlight = reported(output, "search_fill");
		char *other = reported(output, "search_other_fill");

		assert_non_null(highlight);
		assert_non_null(other);
		assert_string_not_equal(other, highlight);
		free(highlight);
		free(other);
	}
}

static int free_output(void **state)
{
	free(*state);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_renders_zooms_and_searches, free_output),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
