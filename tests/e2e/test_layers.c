// SPDX-License-Identifier: MIT
/* The layering of user/ (tools/check-layers.sh): the tree keeps it, and a
 * wrong include is caught and named. */
#include "testlib.h"

#include <sys/wait.h>

#define CHECK_LAYERS "tools/check-layers.sh"

/* Runs the check on dir; its output goes to out. Returns the exit status. */
static int run_check(const char *dir, char *out, size_t len)
{
	char command[512];

	snprintf(command, sizeof(command), "%s %s", CHECK_LAYERS, dir);
	return run_shell(command, out, len);
}

static void the_tree_keeps_its_layers(void **state)
{
	char out[4096];

	(void)state;
	if (run_check("user", out, sizeof(out)) != 0)
		print_message("%s", out);
	assert_int_equal(run_check("user", out, sizeof(out)), 0);
	assert_non_null(strstr(out, "ok"));
}

/* A format that reaches up into the session is refused, with the file and line. */
static void an_include_up_the_layers_is_refused(void **state)
{
	char command[1024], dir[200], out[4096];

	(void)state;
	snprintf(dir, sizeof(dir), "%s/layers", test_tmpdir());
	snprintf(command, sizeof(command),
		 "rm -rf %s && cp -r user %s && sed -i '0,/^#include \"/s//#include \"session\\/session.h\"\\n&/' "
		 "%s/formats/collapsed.c",
		 dir, dir, dir);
	assert_int_equal(system(command), 0);
	assert_int_equal(run_check(dir, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "formats/collapsed.c:"));
	assert_non_null(strstr(out, "may not include \"session/session.h\""));
}

/* The BPF contract stays out of the formats: they know only the profile model. */
static void the_bpf_contract_is_refused_in_formats(void **state)
{
	char command[1024], dir[200], out[4096];

	(void)state;
	snprintf(dir, sizeof(dir), "%s/contract", test_tmpdir());
	snprintf(command, sizeof(command),
		 "rm -rf %s && cp -r user %s && sed -i '0,/^#include \"/s//#include \"sample_record.h\"\\n&/' "
		 "%s/formats/varint.c",
		 dir, dir, dir);
	assert_int_equal(system(command), 0);
	assert_int_equal(run_check(dir, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "formats/varint.c:"));
	assert_non_null(strstr(out, "\"sample_record.h\""));
}

/* ... also when named in angle brackets, as unwind/'s headers name the contract. */
static void the_bpf_contract_in_angle_brackets_is_refused_in_formats(void **state)
{
	char command[1024], dir[200], out[4096];

	(void)state;
	snprintf(dir, sizeof(dir), "%s/contract_angle", test_tmpdir());
	snprintf(command, sizeof(command),
		 "rm -rf %s && cp -r user %s && sed -i '0,/^#include \"/s//#include <unwind_table.h>\\n&/' "
		 "%s/formats/varint.c",
		 dir, dir, dir);
	assert_int_equal(system(command), 0);
	assert_int_equal(run_check(dir, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "formats/varint.c:"));
	assert_non_null(strstr(out, "<unwind_table.h>"));
}

/* Root may not run the parsers kept for the worker (worker/parser_worker.h): unwind/ including
 * the worker's table builder is refused. */
static void the_worker_is_refused_in_roots_parsers(void **state)
{
	char command[1024], dir[200], out[4096];

	(void)state;
	snprintf(dir, sizeof(dir), "%s/worker", test_tmpdir());
	snprintf(command, sizeof(command),
		 "rm -rf %s && cp -r user %s && sed -i '0,/^#include \"/s//#include \"worker\\/unwind_build.h\"\\n&/' "
		 "%s/unwind/file_table.c",
		 dir, dir, dir);
	assert_int_equal(system(command), 0);
	assert_int_equal(run_check(dir, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "unwind/file_table.c:"));
	assert_non_null(strstr(out, "unwind/ may not include \"worker/unwind_build.h\""));
}

/* Every header of user/, include/ and bpf/ has a name of its own: include/ and bpf/ are found
 * by bare names along -I paths, so a second header of the same name would be chosen by the
 * search order and the includer's folder, not by what the line says. */
static void no_two_headers_share_a_name(void **state)
{
	char out[4096];
	FILE *pipe;
	size_t used = 0;

	(void)state;
	pipe = popen("find user include bpf -name '*.h' -printf '%f\\n' | sort | uniq -d", "r");
	assert_non_null(pipe);
	while (used + 1 < sizeof(out) && fgets(out + used, (int)(sizeof(out) - used), pipe))
		used += strlen(out + used);
	out[used] = 0;
	assert_int_equal(pclose(pipe), 0);
	if (used)
		print_message("headers sharing a name:\n%s", out);
	assert_int_equal(used, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_tree_keeps_its_layers),
		cmocka_unit_test(an_include_up_the_layers_is_refused),
		cmocka_unit_test(the_bpf_contract_is_refused_in_formats),
		cmocka_unit_test(the_bpf_contract_in_angle_brackets_is_refused_in_formats),
		cmocka_unit_test(the_worker_is_refused_in_roots_parsers),
		cmocka_unit_test(no_two_headers_share_a_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
