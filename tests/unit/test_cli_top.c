// SPDX-License-Identifier: MIT
/* cli/top.c: the same samples rank alike from every format that can hold them. */
#include "testlib.h"

#include "cli/commands.h"
#include "formats/mojo/mojo.h"
#include "formats/tachyon/tachyon.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Three functions tied on own and total time, which the two readers meet in different orders. */
static void write_samples(const char *path, pf_writer_create_fn *create)
{
	struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;
	const struct pf_writer_ops *ops;
	struct pf_frame stacks[3][2] = {
		{ pf_frame_unlocated(PF_FRAME_PYTHON, "app.py", "main"), pf_frame_unlocated(PF_FRAME_PYTHON, "app.py", "zeta") },
		{ pf_frame_unlocated(PF_FRAME_PYTHON, "app.py", "main"), pf_frame_unlocated(PF_FRAME_PYTHON, "app.py", "alpha") },
		{ pf_frame_unlocated(PF_FRAME_PYTHON, "app.py", "main"), pf_frame_unlocated(PF_FRAME_NATIVE, "libpython.so", "PyObject_Malloc") },
	};
	void *state;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(create(fd, &options, &state, &ops), 0);
	/* as a recording says them */
	assert_int_equal(ops->set_metadata(state, "mode", "cpu"), 0);
	assert_int_equal(ops->set_metadata(state, "interval", "1000"), 0);
	for (size_t i = 0; i < 30; i++) {
		size_t which = i % 3;
		struct pf_sample sample = { .pid = 1, .tid = 1, .timestamp_us = 1000 + i * 1000,
					    .metrics = PF_METRIC_TIME, .time_us = 1000, .status = PF_STATUS_ON_CPU,
					    .frame_count = 2, .frames = stacks[which] };

		assert_int_equal(ops->add_sample(state, &sample), 0);
	}
	assert_int_equal(ops->finish(state), 0);
	ops->destroy(state);
	close(fd);
}

/* top's report of path, from its second line on (the first names the file). */
static char *top_of(const char *path)
{
	char out_path[4096], *argv[] = { "top", "-n", "10", (char *)path, NULL };
	int saved = dup(STDOUT_FILENO), fd;
	size_t len = 0;
	char *text, *body;

	snprintf(out_path, sizeof(out_path), "%s.top", path);
	fd = open(out_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0 && saved >= 0);
	fflush(stdout);
	dup2(fd, STDOUT_FILENO);
	assert_int_equal(top_main(4, argv), 0);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	close(fd);
	text = (char *)read_whole_file(out_path, &len);
	assert_non_null(text);
	body = strdup(strchr(text, '\n') ? strchr(text, '\n') + 1 : text);
	free(text);
	return body;
}

static void ties_rank_alike_from_mojo_and_tachyon(void **state)
{
	char mojo[4096], tachyon[4096];
	char *from_mojo, *from_tachyon;

	(void)state;
	snprintf(mojo, sizeof(mojo), "%s/ranks.mojo", test_tmpdir());
	snprintf(tachyon, sizeof(tachyon), "%s/ranks.bin", test_tmpdir());
	write_samples(mojo, mojo_writer_create);
	write_samples(tachyon, tachyon_writer_create);
	from_mojo = top_of(mojo);
	from_tachyon = top_of(tachyon);
	print_message("mojo:\n%stachyon:\n%s", from_mojo, from_tachyon);
	assert_string_equal(from_mojo, from_tachyon);
	/* the tie is broken by name */
	assert_true(strstr(from_mojo, "PyObject_Malloc") < strstr(from_mojo, "alpha"));
	assert_true(strstr(from_mojo, "alpha") < strstr(from_mojo, "zeta"));
	free(from_mojo);
	free(from_tachyon);
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ties_rank_alike_from_mojo_and_tachyon),
	};

	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
