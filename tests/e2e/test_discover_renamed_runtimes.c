// SPDX-License-Identifier: MIT
/*
 * Finding interpreters whatever their files are called, once per file: the
 * verdicts on renamed runtimes (a static python named uwsgi, libpython under
 * another name), a cache that examines each distinct file once however many
 * processes map it (200 sleeps cost three examinations), bounded and counted;
 * namespace pids and cgroups. End to end (real BPF, root): a whole-host run
 * profiles a renamed static interpreter, a C program embedding libpython, one
 * loading it with dlopen (as a PyInstaller bundle does) and a python in a new
 * pid namespace by their function names, the metadata giving the namespace
 * pid; -p accepts the renamed interpreter.
 */
#include "testlib.h"

#include <inttypes.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "formats/format_registry.h"
#include "profile/profile.h"
#include "elf/elf_file.h"
#include "proc/proc_identity.h"
#include "proc/proc_maps.h"
#include "python/py_discover.h"
#include "python/py_runtime_file.h"
#include "util/array.h"

#define STATIC_PYTHON "/usr/bin/python3.11"
#define SLEEPERS 200
/* Samples a spinning subject must have at least (a busy 2-core machine gives each ~300 a second). */
#define MIN_SAMPLES 100
/* found, and not by a stray sample: the least a spinner starved by a loaded host may show */
#define FOUND_SAMPLES_MIN 20
/* Guards against a hung child, not measurements. */
#define READY_TRIES 500
#define READY_POLL_MS 10

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void stop(pid_t pid)
{
	if (pid <= 0)
		return;
	/* a pid namespace's PID 1 ignores SIGTERM from outside: only SIGKILL ends it */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* The pyenv interpreter of label ("3.12"): its command and its prefix (the directory above bin/). */
static bool pyenv_python(const char *label, char *command, size_t command_len, char *prefix, size_t prefix_len)
{
	char *slash;

	if (!test_python_command(label, command, command_len) || !strstr(command, "/.pyenv/"))
		return false;
	snprintf(prefix, prefix_len, "%s", command);
	for (int up = 0; up < 2; up++) {
		slash = strrchr(prefix, '/');
		if (!slash)
			return false;
		*slash = 0;
	}
	return true;
}

/* Whether some mapping of pid has a path containing name (the loader has mapped it). */
static bool maps_file(pid_t pid, const char *name)
{
	struct proc_maps maps;
	bool found = false;

	if (proc_maps_read(pid, &maps))
		return false;
	for (size_t i = 0; i < maps.count && !found; i++)
		found = strstr(maps.maps[i].path, name) != NULL;
	proc_maps_free(&maps);
	return found;
}

/* Whether pid runs a program whose path contains exe_name (it has exec'd). */
static bool runs(pid_t pid, const char *exe_name)
{
	char link[64], exe[PATH_MAX];
	ssize_t len;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	len = readlink(link, exe, sizeof(exe) - 1);
	exe[len > 0 ? len : 0] = 0;
	return strstr(exe, exe_name) != NULL;
}

/* Until pid runs exe_name and its loader mapped library. */
static void wait_for_exec(pid_t pid, const char *exe_name, const char *library)
{
	for (int attempt = 0; attempt < READY_TRIES && !(runs(pid, exe_name) && maps_file(pid, library)); attempt++)
		sleep_ms(READY_POLL_MS);
	assert_true(runs(pid, exe_name) && maps_file(pid, library));
}

/* ---- verdicts on renamed files ---- */

static void copy_file(const char *from, const char *to)
{
	size_t len = 0;
	uint8_t *data = read_whole_file(from, &len);

	assert_non_null(data);
	assert_int_equal(write_whole_file(to, data, len), 0);
	free(data);
	assert_int_equal(chmod(to, 0755), 0);
}

static void examine_file(const char *path, struct py_runtime_file *out)
{
	struct elf_file elf;

	assert_int_equal(elf_file_open(&elf, path), 0);
	py_runtime_file_examine(&elf, out);
	elf_file_close(&elf);
}

/* The file examined under another name: what it holds, not what it is called, decides. */
static void examine_renamed(const char *from, const char *name, struct py_runtime_file *out)
{
	char to[PATH_MAX];

	FORMAT(to, "%s/%s", test_tmpdir(), name);
	copy_file(from, to);
	examine_file(to, out);
	unlink(to);
}

/* The libpython of pyenv's label examined as libembedded.so; false if that python is absent. */
static bool examine_renamed_library(const char *label, const char *library, struct py_runtime_file *out)
{
	char command[1024], prefix[PATH_MAX], path[PATH_MAX + 64];

	if (!pyenv_python(label, command, sizeof(command), prefix, sizeof(prefix)))
		return false;
	FORMAT(path, "%s/lib/%s", prefix, library);
	examine_renamed(path, "libembedded.so", out);
	assert_int_equal(out->verdict, PY_RUNTIME_HERE);
	return true;
}

static void renamed_files_keep_their_verdicts(void **state)
{
	char command[1024], prefix[PATH_MAX];
	struct py_runtime_file file;

	(void)state;
	if (access(STATIC_PYTHON, X_OK) == 0) {
		examine_renamed(STATIC_PYTHON, "uwsgi", &file);
		assert_int_equal(file.verdict, PY_RUNTIME_HERE);
		assert_true(file.sym.has_runtime && file.sym.has_py_version);
	}
	/* 2.7 and 3.9 have no Py_Version: the version comes from the file's SONAME and PY_VERSION */
	if (examine_renamed_library("2.7", "libpython2.7.so.1.0", &file)) {
		assert_true(file.sym.has_interp_head && !file.sym.has_runtime);
		assert_int_equal(file.major, 2);
		assert_int_equal(file.minor, 7);
		assert_true(file.has_micro);
	}
	if (examine_renamed_library("3.9", "libpython3.9.so.1.0", &file)) {
		assert_true(file.sym.has_runtime && !file.sym.has_py_version);
		assert_int_equal(file.major, 3);
		assert_int_equal(file.minor, 9);
		assert_int_equal(file.micro, 18);
	}
	/* a python binary linking libpython holds only a stub main: a client of the runtime */
	if (pyenv_python("3.12", command, sizeof(command), prefix, sizeof(prefix))) {
		examine_renamed(command, "app", &file);
		assert_int_equal(file.verdict, PY_RUNTIME_CLIENT);
	}
	examine_file("/bin/sleep", &file);
	assert_int_equal(file.verdict, PY_RUNTIME_NONE);
}

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

/* The distinct executable files pid maps, added to ids. */
static void note_files(pid_t pid, struct file_ids *ids)
{
	struct proc_maps maps;

	assert_int_equal(proc_maps_read(pid, &maps), 0);
	for (size_t i = 0; i < maps.count; i++) {
		const struct proc_map *map = &maps.maps[i];
		struct file_id id = { map->inode, map->dev_major, map->dev_minor };
		bool known = false;

		if (map->path[0] != '/' || !strchr(map->perms, 'x'))
			continue;
		ids->mappings++;
		for (size_t k = 0; k < ids->count && !known; k++)
			known = !memcmp(&ids->ids[k], &id, sizeof(id));
		if (!known && ids->count < ARRAY_SIZE(ids->ids))
			ids->ids[ids->count++] = id;
	}
	proc_maps_free(&maps);
}

static pid_t start_sleeper(void)
{
	char *argv[] = { "/bin/sleep", "60", NULL };
	pid_t pid = test_spawn(argv, NULL, NULL);

	assert_true(pid > 0);
	return pid;
}

static void non_python_processes_cost_one_examination_per_file(void **state)
{
	struct py_runtime_file_cache *cache;
	struct py_runtime_file_stats stats;
	struct file_ids ids = { .count = 0 };
	static pid_t sleepers[SLEEPERS];
	struct py_target target;
	char err[2048];

	(void)state;
	assert_int_equal(py_runtime_file_cache_new(&cache, PY_RUNTIME_FILE_CACHE_DEFAULT), 0);
	for (size_t i = 0; i < SLEEPERS; i++)
		sleepers[i] = start_sleeper();
	for (size_t i = 0; i < SLEEPERS; i++) {
		wait_for_exec(sleepers[i], "sleep", "libc.so");
		note_files(sleepers[i], &ids);
	}
	for (size_t i = 0; i < SLEEPERS; i++) {
		assert_int_equal(py_discover_runtime_cached(cache, sleepers[i], &target, err, sizeof(err)), -ENOEXEC);
		assert_non_null(strstr(err, "not a Python process"));
	}
	py_runtime_file_cache_stats(cache, &stats);
	print_message("%d sleeps: %zu distinct files, %zu mappings; %llu examined, %llu lookups\n", SLEEPERS,
		      ids.count, ids.mappings, (unsigned long long)stats.examined,
		      (unsigned long long)stats.lookups);
	assert_int_equal(stats.examined, ids.count);
	assert_int_equal(stats.lookups, ids.mappings);
	assert_int_equal(stats.runtimes, 0);
	assert_int_equal(stats.evicted, 0);
	assert_int_equal(stats.files, ids.count);
	for (size_t i = 0; i < SLEEPERS; i++)
		stop(sleepers[i]);
	py_runtime_file_cache_free(cache);
}

/* A Python process found twice: its files are read once. */
static void python_files_are_examined_once(void **state)
{
	char command[1024], prefix[PATH_MAX];
	struct py_runtime_file_cache *cache;
	struct py_runtime_file_stats first, second;
	struct py_target target;
	char err[2048];
	char *argv[] = { command, "-c", "import time\nwhile True: time.sleep(1)", NULL };
	pid_t pid;
	int found = -EAGAIN;

	(void)state;
	if (!pyenv_python("3.12", command, sizeof(command), prefix, sizeof(prefix)))
		skip();
	assert_int_equal(py_runtime_file_cache_new(&cache, PY_RUNTIME_FILE_CACHE_DEFAULT), 0);
	pid = test_spawn(argv, NULL, NULL);
	assert_true(pid > 0);
	/* mid-exec a process maps nothing yet: not a Python process; wait until the loader ran */
	wait_for_exec(pid, "python3.12", "libc.so");
	for (int attempt = 0; attempt < READY_TRIES && found == -EAGAIN; attempt++) {
		found = py_discover_runtime_cached(cache, pid, &target, err, sizeof(err));
		if (found == -EAGAIN)
			sleep_ms(READY_POLL_MS);
	}
	if (found)
		fail_msg("discovery: %d: %s", found, err);
	py_runtime_file_cache_stats(cache, &first);
	assert_int_equal(first.runtimes, 1);
	assert_int_equal(py_discover_runtime_cached(cache, pid, &target, err, sizeof(err)), 0);
	assert_int_equal(target.major, 3);
	assert_int_equal(target.minor, 12);
	py_runtime_file_cache_stats(cache, &second);
	assert_int_equal(second.examined, first.examined);
	assert_true(second.lookups > first.lookups);
	stop(pid);
	py_runtime_file_cache_free(cache);
}

/* Beyond its capacity the cache drops its oldest verdicts, counted; a dropped file is read again. */
static void cache_is_bounded(void **state)
{
	struct py_runtime_file_cache *cache;
	struct py_runtime_file_stats stats;
	struct file_ids ids = { .count = 0 };
	struct py_runtime_file file;
	struct proc_maps maps;
	const struct proc_map *first = NULL;

	(void)state;
	note_files(getpid(), &ids);
	assert_true(ids.count >= 3);
	assert_int_equal(py_runtime_file_cache_new(&cache, 2), 0);
	assert_int_equal(proc_maps_read(getpid(), &maps), 0);
	for (size_t i = 0; i < maps.count; i++) {
		if (maps.maps[i].path[0] != '/' || !strchr(maps.maps[i].perms, 'x'))
			continue;
		if (!first)
			first = &maps.maps[i];
		assert_int_equal(py_runtime_file_lookup(cache, getpid(), &maps.maps[i], &file), 0);
	}
	py_runtime_file_cache_stats(cache, &stats);
	assert_int_equal(stats.files, 2);
	assert_int_equal(stats.examined, ids.count);
	assert_int_equal(stats.evicted, ids.count - 2);
	assert_int_equal(py_runtime_file_lookup(cache, getpid(), first, &file), 0);
	py_runtime_file_cache_stats(cache, &stats);
	assert_int_equal(stats.examined, ids.count + 1);
	proc_maps_free(&maps);
	py_runtime_file_cache_free(cache);
}

/*
 * Past its capacity the cache drops the verdicts least recently used: a file every lookup
 * comes back to (the host's libc, libpython) stays while a stream of others (an attacker's
 * thousands of files) goes through the rest, and is examined once.
 */
static void verdicts_in_use_stay(void **state)
{
	struct py_runtime_file_cache *cache;
	struct py_runtime_file_stats stats;
	struct file_ids ids = { .count = 0 };
	struct py_runtime_file file;
	struct proc_maps maps;
	const struct proc_map *hot = NULL;

	(void)state;
	note_files(getpid(), &ids);
	assert_true(ids.count >= 4);
	assert_int_equal(py_runtime_file_cache_new(&cache, 2), 0);
	assert_int_equal(proc_maps_read(getpid(), &maps), 0);
	for (size_t i = 0; i < maps.count; i++) {
		if (maps.maps[i].path[0] != '/' || !strchr(maps.maps[i].perms, 'x'))
			continue;
		if (!hot)
			hot = &maps.maps[i];
		assert_int_equal(py_runtime_file_lookup(cache, getpid(), &maps.maps[i], &file), 0);
		assert_int_equal(py_runtime_file_lookup(cache, getpid(), hot, &file), 0);
	}
	py_runtime_file_cache_stats(cache, &stats);
	assert_int_equal(stats.files, 2);
	assert_int_equal(stats.examined, ids.count);
	assert_int_equal(stats.evicted, ids.count - 2);
	proc_maps_free(&maps);
	py_runtime_file_cache_free(cache);
}

/* ---- namespaces and cgroups ---- */

/* The first child of pid (/proc/PID/task/PID/children), waiting for it; 0 if none came. */
static pid_t first_child(pid_t pid)
{
	char path[96];

	FORMAT(path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
	for (int attempt = 0; attempt < READY_TRIES; attempt++) {
		FILE *file = fopen(path, "r");
		long child = 0;

		/* a /proc file says size 0: read it as a stream */
		if (file) {
			if (fscanf(file, "%ld", &child) != 1)
				child = 0;
			fclose(file);
		}
		if (child > 0)
			return (pid_t)child;
		sleep_ms(READY_POLL_MS);
	}
	return 0;
}

static void identity_in_a_new_pid_namespace(void **state)
{
	char *argv[] = { "unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "/bin/sleep", "60", NULL };
	struct proc_identity identity;
	pid_t unshare = test_spawn(argv, NULL, NULL), inside;

	(void)state;
	assert_true(unshare > 0);
	inside = first_child(unshare);
	assert_true(inside > 0);
	wait_for_exec(inside, "sleep", "libc.so");
	assert_int_equal(proc_identity_read(inside, &identity), 0);
	assert_int_equal(identity.ns_pid, 1);
	assert_int_equal(identity.ns_depth, 1);
	stop(inside);
	stop(unshare);
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

static void write_text(const char *path, const char *text);

/* A C program that embeds libpython (linked with an rpath, found by nothing but what it maps). */
static bool build_embedded_app(struct subjects *subjects, const char *prefix, const char *version)
{
	char source[PATH_MAX + 16], build[4 * PATH_MAX];
	char text[512];

	FORMAT(source, "%s/app.c", subjects->dir);
	FORMAT(text,
	       "#include <Python.h>\nint main(void)\n{\n\tPy_Initialize();\n\tPyRun_SimpleString(\"%s\");\n"
	       "\treturn 0;\n}\n",
	       EMBEDDED_PROGRAM);
	write_text(source, text);
	FORMAT(subjects->embedded, "%s/embedded-app", subjects->dir);
	FORMAT(build, "cc -o %s %s -I%s/include/python%s -L%s/lib -lpython%s -Wl,-rpath,%s/lib", subjects->embedded,
	       source, prefix, version, prefix, version, prefix);
	return system(build) == 0;
}

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

static void write_text(const char *path, const char *text)
{
	FILE *file = fopen(path, "w");

	assert_non_null(file);
	fputs(text, file);
	assert_int_equal(fclose(file), 0);
}

static bool build_bundle(struct subjects *subjects, const char *prefix, const char *version)
{
	char source[PATH_MAX + 16], library[PATH_MAX + 64], build[3 * PATH_MAX];

	FORMAT(source, "%s/bundle.c", subjects->dir);
	write_text(source, BUNDLE_SOURCE);
	FORMAT(subjects->bundle, "%s/bundle-app", subjects->dir);
	FORMAT(build, "cc -o %s %s", subjects->bundle, source);
	if (system(build) != 0)
		return false;
	FORMAT(library, "%s/lib/libpython%s.so.1.0", prefix, version);
	FORMAT(subjects->bundled_library, "%s/libbundle.so", subjects->dir);
	copy_file(library, subjects->bundled_library);
	return true;
}

static bool prepare_subjects(struct subjects *subjects)
{
	char prefix[PATH_MAX];

	memset(subjects, 0, sizeof(*subjects));
	if (access(STATIC_PYTHON, X_OK) != 0 ||
	    !pyenv_python("3.12", subjects->python, sizeof(subjects->python), prefix, sizeof(prefix)))
		return false;
	FORMAT(subjects->dir, "%s/discover", test_tmpdir());
	mkdir(subjects->dir, 0755);
	FORMAT(subjects->renamed, "%s/uwsgi", subjects->dir);
	copy_file(STATIC_PYTHON, subjects->renamed);
	assert_true(build_embedded_app(subjects, prefix, "3.12"));
	assert_true(build_bundle(subjects, prefix, "3.12"));
	return true;
}

static pid_t start_renamed(const struct subjects *subjects)
{
	char *argv[] = { (char *)subjects->renamed, "-c", RENAMED_PROGRAM, NULL };

	return test_spawn(argv, NULL, NULL);
}

static void start_embedded(struct subjects *subjects)
{
	char *argv[] = { subjects->embedded, NULL };

	subjects->embedded_pid = test_spawn(argv, NULL, NULL);
}

/* Where cgroup v2 is mounted (the unified hierarchy), from /proc/self/mounts; false if nowhere. */
static bool cgroup2_mount(char *out, size_t len)
{
	FILE *mounts = fopen("/proc/self/mounts", "r");
	char device[256], dir[PATH_MAX], type[64];
	bool found = false;

	if (!mounts)
		return false;
	while (!found && fscanf(mounts, "%255s %4095s %63s %*[^\n]", device, dir, type) == 3)
		if (!strcmp(type, "cgroup2"))
			found = (size_t)snprintf(out, len, "%s", dir) < len;
	fclose(mounts);
	return found;
}

/* A group of the test's own, standing for a container: "" where none can be made. */
static void make_container(struct subjects *subjects)
{
	char mount[PATH_MAX];

	subjects->cgroup[0] = 0;
	if (!cgroup2_mount(mount, sizeof(mount)))
		return;
	FORMAT(subjects->cgroup, "%s/pybpfprof-test-%d", mount, (int)getpid());
	if (mkdir(subjects->cgroup, 0755) != 0 && errno != EEXIST)
		subjects->cgroup[0] = 0;
}

/* The python is PID 1 of a new pid namespace (unshare forks it), in the test's cgroup when
 * there is one; SIGKILLed with unshare. */
static void start_namespaced(struct subjects *subjects)
{
	char command[3 * PATH_MAX];
	char *argv[] = { "sh", "-c", command, NULL };

	FORMAT(command, "%s%s%sexec unshare --pid --fork --mount-proc --kill-child %s -c '%s'",
	       subjects->cgroup[0] ? "echo $$ > " : "", subjects->cgroup, subjects->cgroup[0] ? "/cgroup.procs && " : "",
	       subjects->python, NAMESPACED_PROGRAM);
	subjects->unshare_pid = test_spawn(argv, NULL, NULL);
	subjects->namespaced_pid = first_child(subjects->unshare_pid);
}

static void start_bundle(struct subjects *subjects)
{
	char *argv[] = { subjects->bundle, subjects->bundled_library, NULL };

	subjects->bundle_pid = test_spawn(argv, NULL, NULL);
}

static void stop_subjects(struct subjects *subjects)
{
	stop(subjects->bundle_pid);
	stop(subjects->renamed_pid);
	stop(subjects->embedded_pid);
	if (subjects->namespaced_pid > 0)
		kill(subjects->namespaced_pid, SIGKILL);
	stop(subjects->unshare_pid);
	/* a group can go once its processes have (the killed python is reaped by the kernel) */
	for (int attempt = 0; subjects->cgroup[0] && attempt < READY_TRIES && rmdir(subjects->cgroup); attempt++)
		sleep_ms(READY_POLL_MS);
}

/* Samples of pid (any pid: 0) whose innermost Python frame is leaf. */
struct leaf_count {
	const char *leaf;
	pid_t pid;
	size_t samples;
};

static const struct pf_frame *python_leaf(const struct pf_sample *sample)
{
	for (size_t i = sample->frame_count; i-- > 0;)
		if (sample->frames[i].kind == PF_FRAME_PYTHON)
			return &sample->frames[i];
	return NULL;
}

/* Counts the samples of each leaf (of its pid); the metadata of "process.PID" of wanted_pid. */
static void read_profile(const char *path, struct leaf_count *counts, size_t count, pid_t wanted_pid,
			 char *process_metadata, size_t metadata_len)
{
	struct pf_reader *reader;
	struct pf_sample sample;
	char err[512], key[32];
	const char *value;
	int got;

	assert_int_equal(format_registry_open_reader(&reader, path, err, sizeof(err)), 0);
	while ((got = pf_reader_next_sample(reader, &sample)) > 0) {
		const struct pf_frame *leaf = python_leaf(&sample);

		for (size_t i = 0; leaf && i < count; i++)
			if (!strcmp(leaf->name, counts[i].leaf) && (!counts[i].pid || (pid_t)sample.pid == counts[i].pid))
				/* the ticks it stands for: a whole-host run thins a costly process (--max-overhead) */
				counts[i].samples += sample.samples ? sample.samples : 1;
	}
	assert_int_equal(got, 0);
	FORMAT(key, "process.%d", (int)wanted_pid);
	value = pf_reader_metadata(reader, key);
	snprintf(process_metadata, metadata_len, "%s", value ? value : "");
	pf_reader_close(reader);
}

/* Until the profiler says it samples the host (its outputs open, BPF attached; err_path is its
 * stderr): its first scan of /proc is under way, and exec notices come. */
static void wait_for_sampling(const char *err_path)
{
	char pattern[PATH_MAX + 64];

	FORMAT(pattern, "grep -q 'sampling every Python process' %s 2>/dev/null", err_path);
	for (int attempt = 0; attempt < READY_TRIES && system(pattern) != 0; attempt++)
		sleep_ms(READY_POLL_MS);
	/* the scan of /proc follows the opening */
	sleep_ms(500);
}

static void whole_host_finds_renamed_embedded_and_namespaced(void **state)
{
	struct subjects subjects;
	char out[PATH_MAX], err_path[PATH_MAX], metadata[1024];
	char *argv[] = { (char *)pybpfprof_binary(), "-v", "-d", "5", "-o", out, NULL };
	struct leaf_count counts[4];
	uint64_t cpu_ms[4];
	uint8_t *summary;
	size_t summary_len = 0;
	pid_t profiler;

	(void)state;
	if (!prepare_subjects(&subjects))
		skip();
	make_container(&subjects);
	FORMAT(out, "%s/host.mojo", test_tmpdir());
	FORMAT(err_path, "%s/host.err", test_tmpdir());
	/* one running before (found by the scan), two started during the run (found at exec) */
	subjects.renamed_pid = start_renamed(&subjects);
	sleep_ms(300);
	profiler = test_spawn(argv, NULL, err_path);
	wait_for_sampling(err_path);
	start_embedded(&subjects);
	start_namespaced(&subjects);
	start_bundle(&subjects);
	assert_int_equal(test_wait_status(profiler), 0);
	assert_true(subjects.namespaced_pid > 0);
	counts[0] = (struct leaf_count){ "renamed_spin", subjects.renamed_pid, 0 };
	counts[1] = (struct leaf_count){ "embedded_spin", subjects.embedded_pid, 0 };
	counts[2] = (struct leaf_count){ "namespaced_spin", subjects.namespaced_pid, 0 };
	counts[3] = (struct leaf_count){ "bundled_spin", subjects.bundle_pid, 0 };
	/* each spinner's CPU by its own account, before it is stopped */
	for (size_t i = 0; i < 4; i++)
		cpu_ms[i] = test_cpu_ms(counts[i].pid);
	stop_subjects(&subjects);
	read_profile(out, counts, 4, subjects.namespaced_pid, metadata, sizeof(metadata));
	print_message("renamed %zu, embedded %zu, namespaced %zu, bundled %zu samples (for %" PRIu64 ", %" PRIu64
		      ", %" PRIu64 ", %" PRIu64 " ms of CPU); pid %d: %s\n",
		      counts[0].samples, counts[1].samples, counts[2].samples, counts[3].samples, cpu_ms[0], cpu_ms[1],
		      cpu_ms[2], cpu_ms[3], (int)subjects.namespaced_pid, metadata);
	/* Four spinners share the machine's cores, each a part of the run: on a loaded host a small
	 * part. Each was found, and sampled for a good part of the CPU it had (at 1 kHz a sample a
	 * ms, the start before it was found taking some). */
	for (size_t i = 0; i < 4; i++)
		if (counts[i].samples < MIN_SAMPLES && (counts[i].samples < FOUND_SAMPLES_MIN ||
							counts[i].samples * 4 < cpu_ms[i]))
			fail_msg("%s: %zu samples of pid %d for %" PRIu64 " ms of its CPU", counts[i].leaf,
				 counts[i].samples, (int)counts[i].pid, cpu_ms[i]);
	/* unshare --fork made the python PID 1 of its namespace */
	assert_non_null(strstr(metadata, "ns_pid=1 "));
	assert_non_null(strstr(metadata, "ns_depth=1 "));
	assert_non_null(strstr(metadata, "cgroup=/"));
	summary = read_whole_file(err_path, &summary_len);
	assert_non_null(summary);
	assert_non_null(strstr((char *)summary, "pybpfprof: discovery: "));
	if (subjects.cgroup[0]) {
		const char *group = strrchr(subjects.cgroup, '/');

		/* its own container: in the metadata, and a group of its own in the summary */
		assert_non_null(strstr(metadata, group));
		assert_non_null(strstr((char *)summary, "by container (cgroup):"));
		assert_non_null(strstr((char *)summary, group));
	}
	free(summary);
}

static void attach_to_renamed_static_interpreter(void **state)
{
	struct subjects subjects;
	char out[PATH_MAX], pid_text[16], err[4096];
	char *argv[] = { (char *)pybpfprof_binary(), "-q", "-p", pid_text, "-d", "1.5", "-o", out, NULL };
	struct leaf_count count = { "renamed_spin", 0, 0 };
	int status;

	(void)state;
	if (!prepare_subjects(&subjects))
		skip();
	subjects.renamed_pid = start_renamed(&subjects);
	count.pid = subjects.renamed_pid;
	sleep_ms(300);
	FORMAT(out, "%s/attach-renamed.mojo", test_tmpdir());
	FORMAT(pid_text, "%d", (int)subjects.renamed_pid);
	status = run_capture(argv, err, sizeof(err));
	stop_subjects(&subjects);
	if (status != 0)
		fail_msg("pybpfprof -p on a renamed interpreter: exit %d: %s", status, err);
	read_profile(out, &count, 1, subjects.renamed_pid, err, sizeof(err));
	if (count.samples < MIN_SAMPLES)
		fail_msg("renamed_spin: %zu samples", count.samples);
	assert_non_null(strstr(err, "ns_depth=0 "));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(renamed_files_keep_their_verdicts),
		cmocka_unit_test(non_python_processes_cost_one_examination_per_file),
		cmocka_unit_test(python_files_are_examined_once),
		cmocka_unit_test(cache_is_bounded),
		cmocka_unit_test(verdicts_in_use_stay),
		cmocka_unit_test(identity_in_a_new_pid_namespace),
		cmocka_unit_test(whole_host_finds_renamed_embedded_and_namespaced),
		cmocka_unit_test(attach_to_renamed_static_interpreter),
	};

	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests_name("discover", tests, NULL, NULL);
}
