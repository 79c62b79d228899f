// SPDX-License-Identifier: MIT
#include "proc/launch_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parser/parser_client.h"

/* Where glibc's dynamic linker looks last on x86-64 Debian (its ld.so.cache lists the same). */
static const char *const system_library_dirs[] = {
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/usr/local/lib", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
};

/* A #! line is read up to this (the kernel reads 256 bytes of it). */
#define SCRIPT_LINE_MAX 256

static bool is_regular_file(const char *path, bool executable)
{
	struct stat info;

	return stat(path, &info) == 0 && S_ISREG(info.st_mode) && (!executable || access(path, X_OK) == 0);
}

/* name as execvp finds it: itself when it has a slash, else the first executable on PATH. */
static bool find_on_path(const char *name, char *out)
{
	const char *path = getenv("PATH");

	if (!name[0])
		return false;
	if (strchr(name, '/'))
		return (size_t)snprintf(out, PATH_MAX, "%s", name) < PATH_MAX && is_regular_file(out, true);
	/* execvp's default when PATH is unset. */
	if (!path)
		path = "/bin:/usr/bin";
	while (*path) {
		size_t len = strcspn(path, ":");

		if ((size_t)snprintf(out, PATH_MAX, "%.*s%s%s", (int)len, len ? path : ".", "/", name) < PATH_MAX &&
		    is_regular_file(out, true))
			return true;
		path += len + (path[len] == ':');
	}
	return false;
}

/* The program a #! script runs (its interpreter, or the NAME of `env NAME`); false for any other file. */
static bool script_interpreter(const char *script, char *out)
{
	char line[SCRIPT_LINE_MAX + 1], *interpreter, *argument, *save = NULL;
	int fd = open(script, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ssize_t got;

	if (fd < 0)
		return false;
	got = read(fd, line, SCRIPT_LINE_MAX);
	close(fd);
	if (got < 3 || line[0] != '#' || line[1] != '!')
		return false;
	line[got] = 0;
	line[strcspn(line, "\n")] = 0;
	interpreter = strtok_r(line + 2, " \t", &save);
	argument = strtok_r(NULL, " \t", &save);
	if (!interpreter)
		return false;
	if (argument && argument[0] != '-' && strcmp(strrchr(interpreter, '/') ? strrchr(interpreter, '/') + 1
										: interpreter, "env") == 0)
		return find_on_path(argument, out);
	return find_on_path(interpreter, out);
}

/* The executable itself: argv[0] on PATH, through up to LAUNCH_FILES_MAX_SCRIPTS #! interpreters. */
static bool find_executable(const char *name, char *out)
{
	char next[PATH_MAX];

	if (!find_on_path(name, out))
		return false;
	for (int level = 0; level < LAUNCH_FILES_MAX_SCRIPTS && script_interpreter(out, next); level++)
		memcpy(out, next, PATH_MAX);
	return true;
}

/* name in one directory list (colon-separated; $ORIGIN is the executable's directory). */
static bool find_in_dirs(const char *dirs, const char *name, const char *origin, char *out)
{
	while (dirs && *dirs) {
		size_t len = strcspn(dirs, ":");
		int wrote;

		if (len >= 7 && strncmp(dirs, "$ORIGIN", 7) == 0)
			wrote = snprintf(out, PATH_MAX, "%s%.*s/%s", origin, (int)(len - 7), dirs + 7, name);
		else if (len >= 9 && strncmp(dirs, "${ORIGIN}", 9) == 0)
			wrote = snprintf(out, PATH_MAX, "%s%.*s/%s", origin, (int)(len - 9), dirs + 9, name);
		else
			wrote = snprintf(out, PATH_MAX, "%.*s/%s", (int)len, dirs, name);
		if (len && wrote > 0 && wrote < PATH_MAX && is_regular_file(out, false))
			return true;
		dirs += len + (dirs[len] == ':');
	}
	return false;
}

struct search_path {
	char origin[PATH_MAX];
	const char *rpath, *runpath;
};

/* A library the executable names, where the dynamic linker would find it first. */
static bool find_library(const struct search_path *search, const char *name, char *out)
{
	if (strchr(name, '/'))
		return (size_t)snprintf(out, PATH_MAX, "%s", name) < PATH_MAX && is_regular_file(out, false);
	/* RPATH counts only without RUNPATH. */
	if (!search->runpath && find_in_dirs(search->rpath, name, search->origin, out))
		return true;
	if (find_in_dirs(getenv("LD_LIBRARY_PATH"), name, search->origin, out))
		return true;
	if (find_in_dirs(search->runpath, name, search->origin, out))
		return true;
	for (size_t i = 0; i < sizeof(system_library_dirs) / sizeof(system_library_dirs[0]); i++)
		if (find_in_dirs(system_library_dirs[i], name, search->origin, out))
			return true;
	return false;
}

/* The most a dynamic-names answer may take: 512 names of a few dozen bytes. */
#define DYNAMIC_NAMES_REPLY_BUDGET (64u << 10)

/* What the executable at real names, read by the parser worker (root parses none of it: the
 * command may be another user's file); checked. 0, or a negative errno. */
static int read_dynamic_names(const char *real, void **payload, struct parser_dynamic_names *names)
{
	struct parser_client *client = NULL;
	struct stat info;
	size_t len = 0;
	int fd = open(real, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	int err = fd < 0 ? -errno : 0;

	if (!err && (fstat(fd, &info) || !S_ISREG(info.st_mode)))
		err = -EINVAL;
	if (!err)
		err = parser_client_new(&(struct parser_client_options){ 0 }, &client);
	if (!err)
		err = parser_client_request(client, PARSER_REQUEST_DYNAMIC_NAMES, fd, 0, DYNAMIC_NAMES_REPLY_BUDGET,
					    payload, &len);
	if (!err && parser_dynamic_check(*payload, len, names)) {
		err = -EBADMSG;
		free(*payload);
		*payload = NULL;
	}
	parser_client_free(client);
	if (fd >= 0)
		close(fd);
	return err;
}

/* Appends the libraries the ELF file at executable names, as found, after what paths holds. */
static size_t add_libraries(const char *executable, char (*paths)[PATH_MAX], size_t count, size_t max)
{
	struct search_path search = { .rpath = NULL };
	struct parser_dynamic_names names;
	char real[PATH_MAX];
	void *payload = NULL;
	const char *name;

	if (!realpath(executable, real))
		return count;
	snprintf(search.origin, sizeof(search.origin), "%s", real);
	*strrchr(search.origin, '/') = 0;
	if (read_dynamic_names(real, &payload, &names))
		return count;
	search.rpath = names.rpath[0] ? names.rpath : NULL;
	search.runpath = names.runpath[0] ? names.runpath : NULL;
	name = names.needed;
	for (uint32_t i = 0; i < names.needed_count && count < max; i++, name += strlen(name) + 1)
		if (find_library(&search, name, paths[count]))
			count++;
	free(payload);
	return count;
}

size_t launch_files_find(char *const argv[], char (*paths)[PATH_MAX], size_t max)
{
	if (max == 0 || !argv[0] || !find_executable(argv[0], paths[0]))
		return 0;
	return add_libraries(paths[0], paths, 1, max);
}
