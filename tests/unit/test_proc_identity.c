// SPDX-License-Identifier: MIT
/* target/proc_identity: this process's own identity, and the container a cgroup line names. */
#include "testlib.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "formats/format_registry.h"
#include "profile/profile.h"
#include "target/elf_file.h"
#include "target/proc_identity.h"
#include "target/proc_maps.h"
#include "target/py_discover.h"
#include "target/py_runtime_file.h"
#include "util/array.h"

#define STATIC_PYTHON "/usr/bin/python3.11"
#define SLEEPERS 200
/* Samples a spinning subject must have at least (a busy 2-core machine gives each ~300 a second). */
#define MIN_SAMPLES 100
/* Guards against a hung child, not measurements. */
#define READY_TRIES 500
#define READY_POLL_MS 10

/* ---- the verdict cache ---- */

struct file_id {
	uint64_t inode;
	uint32_t dev_major, dev_minor;
};

struct file_ids {
	struct file_id ids[64];
	size_t count;
	size_t mappings; /* executable file mappings seen, with repeats */
};

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

/* ---- end to end: real BPF ---- */

struct subjects {
	char dir[PATH_MAX];
	char renamed[PATH_MAX + 16];   /* the static python, named uwsgi */
	char embedded[PATH_MAX + 32];  /* the C program embedding libpython */
	char python[1024];             /* a pyenv python, run in a new pid namespace */
	char bundle[PATH_MAX + 32];    /* a C program that dlopens libpython, as a PyInstaller bundle does */
	char bundled_library[PATH_MAX + 32]; /* the libpython it loads, under another name */
	char cgroup[PATH_MAX];          /* a cgroup v2 group of the test's, the namespaced one's container */
	pid_t renamed_pid, embedded_pid, unshare_pid, namespaced_pid, bundle_pid;
};

/* Spinning functions whose names the profile must show. */
#define RENAMED_PROGRAM "def renamed_spin():\n    while True:\n        pass\nrenamed_spin()\n"
#define EMBEDDED_PROGRAM "def embedded_spin():\\n    while True:\\n        pass\\nembedded_spin()\\n"
#define NAMESPACED_PROGRAM "def namespaced_spin():\n    while True:\n        pass\nnamespaced_spin()\n"

/* The bundle: nothing CPython's at its exec; libpython (named libbundle.so) comes by dlopen,
 * 500 ms later (a PyInstaller bootloader extracts its files first). */
#define BUNDLE_SOURCE                                                                                    \
	"#include <dlfcn.h>\n#include <unistd.h>\n"                                                  \
	"int main(int argc, char **argv)\n{\n"                                                       \
	"\tusleep(500000);\n"                                                                        \
	"\tvoid *lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);\n"                                  \
	"\tvoid (*initialize)(void) = lib ? (void (*)(void))dlsym(lib, \"Py_Initialize\") : 0;\n"       \
	"\tint (*run)(const char *) = lib ? (int (*)(const char *))dlsym(lib, \"PyRun_SimpleString\") : 0;\n" \
	"\tif (!initialize || !run)\n\t\treturn 1;\n"                                                 \
	"\tinitialize();\n"                                                                          \
	"\treturn run(\"def bundled_spin():\\n    while True:\\n        pass\\nbundled_spin()\\n\");\n}\n"

/* Samples of pid (any pid: 0) whose innermost Python frame is leaf. */
struct leaf_count {
	const char *leaf;
	pid_t pid;
	size_t samples;
};

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
