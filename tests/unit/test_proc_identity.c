// SPDX-License-Identifier: MIT
/* target/proc_identity: this process's own identity, and the container a cgroup line names. */
#include "testlib.h"

#include "proc/proc_identity.h"

static void identity_of_ourselves(void **state)
{
	struct proc_identity identity;

	(void)state;
	assert_int_equal(proc_identity_read(getpid(), &identity), 0);
	assert_int_equal(identity.ns_pid, getpid());
	assert_int_equal(identity.ns_depth, 0);
	assert_true(identity.cgroup[0] == '/');
}

static void container_of_cgroup_lines(void **state)
{
	char cgroup[64];

	(void)state;
	/* cgroup v2 only */
	proc_identity_parse_cgroup("0::/system.slice/docker-0123.scope\n", cgroup, sizeof(cgroup));
	assert_string_equal(cgroup, "/system.slice/docker-0123.scope");
	/* a hybrid host: the unified hierarchy at its root, Docker's container in the v1 ones */
	proc_identity_parse_cgroup("12:memory:/docker/abc\n1:name=systemd:/docker/abc\n0::/\n", cgroup,
				   sizeof(cgroup));
	assert_string_equal(cgroup, "/docker/abc");
	proc_identity_parse_cgroup("4:memory:/sandbox/7\n1:name=systemd:/\n0::/\n", cgroup, sizeof(cgroup));
	assert_string_equal(cgroup, "/sandbox/7");
	proc_identity_parse_cgroup("1:name=systemd:/\n0::/\n", cgroup, sizeof(cgroup));
	assert_string_equal(cgroup, "/");
	/* cut to fit, never beyond its line */
	proc_identity_parse_cgroup("0::/a-very-long-path-that-goes-on-and-on-and-on-and-on-and-on-beyond\n", cgroup, 8);
	assert_string_equal(cgroup, "/a-very");
	proc_identity_parse_cgroup("garbage\n", cgroup, sizeof(cgroup));
	assert_string_equal(cgroup, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(identity_of_ourselves),
		cmocka_unit_test(container_of_cgroup_lines),
	};

	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests_name("proc_identity", tests, NULL, NULL);
}
