// SPDX-License-Identifier: MIT
/* The documentation holds together: every relative link of README.md and doc's Markdown files
 * resolves (tools/check-doc-links.py); every command's options in --help are those of the man
 * page, doc/usage.md and the bash completion, and every format of the registry is in each list
 * of formats (tools/check-options.py). A disagreement is caught and named. No root, no BPF. */
#include "testlib.h"

#include <sys/wait.h>

/* A copy of the checkout's documentation (README.md, doc/ and the folders they link into), to break. */
static const char *docs_copy(const char *name)
{
	static char dir[PATH_MAX];
	char command[PATH_MAX * 3 + 256], out[1024];

	snprintf(dir, sizeof(dir), "%s/%s", test_tmpdir(), name);
	snprintf(command, sizeof(command),
		 "rm -rf '%s' && mkdir -p '%s' && cp -r README.md doc bench fuzz tests contrib '%s'/",
		 dir, dir, dir);
	assert_int_equal(run_shell(command, out, sizeof(out)), 0);
	return dir;
}

static void every_relative_link_resolves(void **state)
{
	char out[16384];
	int status;

	(void)state;
	status = run_shell("tools/check-doc-links.py .", out, sizeof(out));
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
	assert_int_equal(run_shell(command, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "doc/usage.md:"));
	assert_non_null(strstr(out, "(gone.md): no such file or folder: doc/gone.md"));
	assert_non_null(strstr(out, "no heading makes #no-such-heading in doc/modes.md"));
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
	assert_int_equal(run_shell(command, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "README.md:"));
	assert_non_null(strstr(out, "#the-overhead-budget in doc/modes.md"));
}

/* The README is a front door: a newcomer reads it in minutes, and the rest is in doc/. */
#define README_MAX_WORDS 2000
#define README_MAX_LINE 120

static char *checkout_file(const char *relative)
{
	char path[PATH_MAX + 64];
	size_t len;

	snprintf(path, sizeof(path), "%s/%s", test_source_dir(), relative);
	return (char *)read_whole_file(path, &len);
}

static void the_readme_is_short_and_narrow(void **state)
{
	char *text = checkout_file("README.md");
	size_t words = 0, line_number = 1, long_lines = 0;
	bool in_word = false;

	(void)state;
	assert_non_null(text);
	for (char *c = text; *c; c++) {
		bool space = *c == ' ' || *c == '\t' || *c == '\n';

		words += !space && !in_word;
		in_word = !space;
	}
	for (char *line = text, *end; *line; line = end + 1, line_number++) {
		size_t len;

		end = strchr(line, '\n');
		if (!end)
			end = line + strlen(line);
		len = (size_t)(end - line);
		/* A table row or a line with a URL may be as long as it needs. */
		if (len > README_MAX_LINE && line[0] != '|' && !memmem(line, len, "://", 3)) {
			print_message("README.md:%zu: %zu characters\n", line_number, len);
			long_lines++;
		}
		if (!*end)
			break;
	}
	free(text);
	print_message("README.md: %zu words\n", words);
	assert_true(words <= README_MAX_WORDS);
	assert_int_equal(long_lines, 0);
}

/* Examples show neutral paths, never the folders of the machine they were captured on. */
static void no_example_shows_a_machine_path(void **state)
{
	static const char *const machine_paths[] = { " /root/", "`/root/", "(/root/", "/home/", "/work/",
						     ".pyenv/", "pyenv/versions", "/Users/" };
	char command[PATH_MAX + 64], line[4096];
	size_t found = 0;
	FILE *list;

	(void)state;
	snprintf(command, sizeof(command), "cd '%s' && grep -Hn '' README.md doc/*.md", test_source_dir());
	list = popen(command, "r");
	assert_non_null(list);
	while (fgets(line, sizeof(line), list))
		for (size_t i = 0; i < sizeof(machine_paths) / sizeof(machine_paths[0]); i++)
			if (strstr(line, machine_paths[i])) {
				print_message("%s", line);
				found++;
				break;
			}
	assert_int_equal(pclose(list), 0);
	assert_int_equal(found, 0);
}

/* The registry's format names and extensions, as tools/check-options.py takes them. */
static void check_options_command(char *out, size_t len, const char *root)
{
	char names[512], extensions[1024];

	format_registry_names(names, sizeof(names), "|", "|");
	format_registry_extensions(extensions, sizeof(extensions), true);
	snprintf(out, len, "tools/check-options.py --root '%s' --binary ./pybpfprof --formats '%s' --extensions '%s'",
		 root, names, extensions);
}

static void every_option_and_format_agrees(void **state)
{
	char command[PATH_MAX + 2048], out[16384];
	int status;

	(void)state;
	check_options_command(command, sizeof(command), ".");
	status = run_shell(command, out, sizeof(out));
	if (status)
		print_message("%s", out);
	assert_int_equal(status, 0);
	assert_non_null(strstr(out, "ok"));
}

/* An option --help has and the man page drops, and one a document lists that --help has not:
 * each named, with where it is missing. */
static void an_option_out_of_step_is_named(void **state)
{
	char check[PATH_MAX + 2048], command[PATH_MAX * 3 + 4096], out[16384];
	const char *dir = docs_copy("options");

	(void)state;
	check_options_command(check, sizeof(check), dir);
	snprintf(command, sizeof(command),
		 "sed -i '/^.fB.-.-target.-budget/,+3d' '%s/doc/pybpfprof.1' && "
		 "sed -i 's/^| `--bpf-stats` |/| `--bpf-stats`, `--frobnicate` |/' '%s/doc/usage.md' && %s",
		 dir, dir, check);
	assert_int_equal(run_shell(command, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "doc/pybpfprof.1: .SH OPTIONS lacks --target-budget, which `pybpfprof --help` has"));
	assert_non_null(strstr(out, "doc/usage.md: the table under \"Options\" lists --frobnicate, which "
				    "`pybpfprof --help` does not have"));
	assert_null(strstr(out, "lacks --bpf-stats"));
}

/* A subcommand's option: its own section of the man page. */
static void a_subcommand_option_out_of_step_is_named(void **state)
{
	char check[PATH_MAX + 2048], command[PATH_MAX * 3 + 4096], out[16384];
	const char *dir = docs_copy("subcommand");

	(void)state;
	check_options_command(check, sizeof(check), dir);
	snprintf(command, sizeof(command),
		 "sed -E -i 's/^(.fB.-n.fR), .fB.-.-lines.fR/\\1/' '%s/doc/pybpfprof.1' && %s",
		 dir, check);
	assert_int_equal(run_shell(command, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "doc/pybpfprof.1: .SS pybpfprof top [OPTIONS] [FILE] lacks --lines, which "
				    "`pybpfprof top --help` has"));
}

/* A format the man page's -f leaves out, as it once listed four of six. */
static void a_format_left_out_is_named(void **state)
{
	char check[PATH_MAX + 2048], command[PATH_MAX * 3 + 4096], out[16384];
	const char *dir = docs_copy("formats");

	(void)state;
	check_options_command(check, sizeof(check), dir);
	snprintf(command, sizeof(command),
		 "sed -i 's/^mojo, tachyon, collapsed, svg, pprof, speedscope, pstats, gecko, gecko-gz or jsonl, "
		 "whatever/mojo, tachyon, collapsed or svg, whatever/' '%s/doc/pybpfprof.1' && %s",
		 dir, check);
	assert_int_equal(run_shell(command, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "doc/pybpfprof.1, .TP -f: the format pprof is not there"));
	assert_non_null(strstr(out, "doc/pybpfprof.1, .TP -f: the format speedscope is not there"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_readme_is_short_and_narrow),
		cmocka_unit_test(no_example_shows_a_machine_path),
		cmocka_unit_test(every_relative_link_resolves),
		cmocka_unit_test(a_broken_link_is_named),
		cmocka_unit_test(a_renamed_heading_breaks_its_links),
		cmocka_unit_test(every_option_and_format_agrees),
		cmocka_unit_test(an_option_out_of_step_is_named),
		cmocka_unit_test(a_subcommand_option_out_of_step_is_named),
		cmocka_unit_test(a_format_left_out_is_named),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
