// SPDX-License-Identifier: MIT
/* The documentation holds together: every relative link of README.md and doc's Markdown files
 * resolves (tools/check-doc-links.py), and a broken one is caught and named. No root, no BPF. */
#include "testlib.h"

#include <sys/wait.h>

/* Runs command from the checkout with its output in out; returns its exit status. */
static int run_tool(const char *command, char *out, size_t len)
{
	char line[PATH_MAX + 8192];
	FILE *pipe;
	size_t used = 0;
	int status;

	snprintf(line, sizeof(line), "cd '%s' && %s 2>&1", test_source_dir(), command);
	pipe = popen(line, "r");
	assert_non_null(pipe);
	while (used + 1 < len && fgets(out + used, (int)(len - used), pipe))
		used += strlen(out + used);
	out[used] = 0;
	status = pclose(pipe);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* A copy of the checkout's documentation (README.md, doc/ and what they link to), to break. */
static const char *docs_copy(const char *name)
{
	static char dir[PATH_MAX];
	char command[PATH_MAX * 3 + 256], out[1024];

	snprintf(dir, sizeof(dir), "%s/%s", test_tmpdir(), name);
	snprintf(command, sizeof(command),
		 "rm -rf '%s' && mkdir -p '%s' && cp -r README.md doc bench fuzz tests contrib '%s'/",
		 dir, dir, dir);
	assert_int_equal(run_tool(command, out, sizeof(out)), 0);
	return dir;
}

static void every_relative_link_resolves(void **state)
{
	char out[16384];
	int status;

	(void)state;
	status = run_tool("tools/check-doc-links.py .", out, sizeof(out));
	if (status)
		print_message("%s", out);
	assert_int_equal(status, 0);
	assert_non_null(strstr(out, "ok"));
}

/* A link to a missing file and one to a heading that is not there: each named, with its line. */
static void a_broken_link_is_named(void **state)
{
	char command[PATH_MAX * 2 + 512], out[16384];
	const char *dir = docs_copy("links");

	(void)state;
	snprintf(command, sizeof(command),
		 "printf '\\nSee [gone](gone.md) and [here](modes.md#no-such-heading).\\n' >> '%s/doc/usage.md' && "
		 "tools/check-doc-links.py '%s'",
		 dir, dir);
	assert_int_equal(run_tool(command, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "doc/usage.md:"));
	assert_non_null(strstr(out, "(gone.md): no such file or folder: doc/gone.md"));
	assert_non_null(strstr(out, "no heading makes #no-such-heading in doc/modes.md"));
	assert_non_null(strstr(out, "2 broken links"));
}

/* A heading renamed under a link that points at it breaks the link. */
static void a_renamed_heading_breaks_its_links(void **state)
{
	char command[PATH_MAX * 2 + 512], out[16384];
	const char *dir = docs_copy("heading");

	(void)state;
	snprintf(command, sizeof(command),
		 "sed -i 's/^## The overhead budget$/## Overhead budget/' '%s/doc/modes.md' && "
		 "tools/check-doc-links.py '%s'",
		 dir, dir);
	assert_int_equal(run_tool(command, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "README.md:"));
	assert_non_null(strstr(out, "#the-overhead-budget in doc/modes.md"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_relative_link_resolves),
		cmocka_unit_test(a_broken_link_is_named),
		cmocka_unit_test(a_renamed_heading_breaks_its_links),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
