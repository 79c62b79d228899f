// SPDX-License-Identifier: MIT
#include "python/py_discover.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/elf_file.h"
#include "elf/elf_notes.h"
#include "proc/proc_maps.h"
#include "python/py_runtime_file.h"
#include "proc/target_mem.h"
#include "util/array.h"
#include "util/errbuf.h"

#define SUPPORTED_VERSIONS "offsets are known for 2.7 and 3.6-3.12; 3.13+ are read from the target"

/* Where the thread-state extras live: the GIL's holder and the GC's collecting flag. */
struct state_layouts {
	struct py_gil_layout gil;
	struct py_gc_layout gc;
	uint32_t code_stamp; /* offset of the code-object counter in the interpreter state, or PY_OFF_NONE */
};

struct discovery {
	pid_t pid;
	const struct proc_maps *maps;
	struct py_runtime_file_cache *cache;
	const char *runtime_path;
	struct proc_file_id runtime_file;
	struct elf_load_segment segments[ELF_FILE_MAX_LOAD_SEGMENTS];
	size_t segment_count;
	struct py_runtime_file file;
	uint64_t bias;
	char *err_text;
	size_t err_len;
};

/* What the files a process maps told, short of a runtime. */
struct search {
	const char *client;     /* a file importing CPython's API (first seen) */
	const char *failed;     /* a file named like CPython that could not be examined */
	int failed_err;
	bool gone;              /* the process exited meanwhile */
	size_t examined;        /* files read for this search (verdicts not already known) */
	size_t examined_named;  /* ... of which named like CPython */
	size_t skipped;         /* files left unread, past PY_DISCOVER_MAX_UNNAMED_READS */
};

/*
 * Files not named like CPython that one discovery of a process reads (verdicts the
 * cache did not know). A process mapping 20,000 tiny ELF files would otherwise have
 * each of them read, on every discovery, by the thread that drains the ring (and push
 * every other process's verdicts out of the cache). The runtime is almost always in a
 * file named like it (libpython*, python*), read whatever the count; the next
 * discovery reads the next share, those read being remembered.
 */
#define PY_DISCOVER_MAX_UNNAMED_READS 64
/* The same for files named like CPython: a process maps one or two, an attacker thousands
 * (each read again when touched), which would make one discovery last seconds and hold up
 * every other process's. */
#define PY_DISCOVER_MAX_NAMED_READS 16

static bool is_libpython(const char *name)
{
	return !strncmp(name, "libpython", strlen("libpython")) && strstr(name, ".so");
}

static bool is_python_binary(const char *name)
{
	return !strncmp(name, "python", strlen("python"));
}

static bool already_listed(const char **paths, size_t count, const char *path)
{
	for (size_t i = 0; i < count; i++) {
		if (!strcmp(paths[i], path))
			return true;
	}
	return false;
}

/* An executable mapping of a file: where a runtime's code is, one per ELF file. */
static bool is_code_of_file(const struct proc_map *map)
{
	return map->path[0] == '/' && strchr(map->perms, 'x');
}

/*
 * The examination order: files named libpython*, then python*, then the rest. Names only
 * save examinations (with a shared build the binary only has a stub main); any file holding
 * the runtime counts, whatever it is called.
 */
static unsigned name_rank(const char *path)
{
	const char *name = proc_maps_basename(path);

	if (is_libpython(name))
		return 0;
	return is_python_binary(name) ? 1 : 2;
}

/* "searched a, b, c" listing every distinct executable file mapped (the ELFs), cut to fit. */
static void describe_searched(const struct proc_maps *maps, char *out, size_t outlen)
{
	const char *listed[64];
	size_t count = 0, used = 0;

	out[0] = 0;
	for (size_t i = 0; i < maps->count && count < ARRAY_SIZE(listed); i++) {
		const char *path = maps->maps[i].path;
		int n;

		if (!is_code_of_file(&maps->maps[i]) || already_listed(listed, count, path))
			continue;
		listed[count] = path;
		n = snprintf(out + used, outlen - used, "%s%s", count ? ", " : "", path);
		count++;
		if (n < 0 || (size_t)n >= outlen - used) {
			if (outlen > 4)
				strcpy(out + outlen - 4, "...");
			return;
		}
		used += (size_t)n;
	}
	if (!count)
		snprintf(out, outlen, "no executable file mappings");
}

/* Files the cache has read so far (without one, every lookup reads). */
static uint64_t files_read(const struct discovery *d, const struct search *search)
{
	struct py_runtime_file_stats stats;

	if (!d->cache)
		return search->examined;
	py_runtime_file_cache_stats(d->cache, &stats);
	return stats.examined;
}

/* Asks about one mapping; true when its file holds the runtime. */
static bool examine(struct discovery *d, const struct proc_map *map, struct search *search)
{
	struct py_runtime_file file;
	bool named_like_python = name_rank(map->path) < 2;
	uint64_t read_before;
	int err;

	if ((!named_like_python && search->examined >= PY_DISCOVER_MAX_UNNAMED_READS) ||
	    (named_like_python && search->examined_named >= PY_DISCOVER_MAX_NAMED_READS)) {
		search->skipped++;
		return false;
	}
	read_before = files_read(d, search);
	err = py_runtime_file_lookup(d->cache, d->pid, map, &file);
	read_before = d->cache ? files_read(d, search) - read_before : 1;
	search->examined += read_before;
	if (named_like_python)
		search->examined_named += read_before;

	if (!err && file.unread == -EFBIG)
		err = -EFBIG;
	if (err) {
		search->gone |= err == -ESRCH;
		if (named_like_python && !search->failed) {
			search->failed = map->path;
			search->failed_err = err;
		}
		return false;
	}
	if (file.verdict == PY_RUNTIME_CLIENT && !search->client)
		search->client = map->path;
	if (file.verdict != PY_RUNTIME_HERE)
		return false;
	d->file = file;
	d->runtime_path = map->path;
	d->runtime_file = (struct proc_file_id){ map->inode, map->dev_major, map->dev_minor };
	return true;
}

static int cannot_open(const struct discovery *d, const char *path, int err)
{
	if (err == -ESRCH)
		return errbuf_format(d->err_text, d->err_len, -ESRCH, "pid %d: process exited during discovery",
				     (int)d->pid);
	return errbuf_format(d->err_text, d->err_len, err,
			     "pid %d: cannot open %s (through /proc/%d/map_files or its root): %s", (int)d->pid, path,
			     (int)d->pid, err == -EFBIG ? "larger than the 512 MiB read for an ELF file" : strerror(-err));
}

static int no_runtime(struct discovery *d, const struct search *search)
{
	char searched[1024];

	if (search->gone)
		return cannot_open(d, "", -ESRCH);
	/* a program linking libpython, which the loader has not mapped yet */
	if (search->client)
		return errbuf_format(d->err_text, d->err_len, -EAGAIN,
				     "pid %d: %s links CPython but no mapped file holds its runtime (yet); retry",
				     (int)d->pid, search->client);
	if (search->failed)
		return cannot_open(d, search->failed, search->failed_err);
	describe_searched(d->maps, searched, sizeof(searched));
	if (search->skipped) {
		py_runtime_file_cache_count_skipped(d->cache, search->skipped);
		return errbuf_format(d->err_text, d->err_len, -ENOEXEC,
				     "pid %d: not a Python process (no file read holds the CPython runtime; %zu "
				     "mappings past the %d read at once left unread; searched %s)",
				     (int)d->pid, search->skipped, PY_DISCOVER_MAX_UNNAMED_READS, searched);
	}
	return errbuf_format(d->err_text, d->err_len, -ENOEXEC,
			     "pid %d: not a Python process (no mapped file holds the CPython runtime; searched %s)",
			     (int)d->pid, searched);
}

/*
 * The verdicts on one rank's files read together, those the cache does not know (up to what
 * the search may still read): one round trip to the parser worker rather than one a file. The
 * lookups of examine() then find them known.
 */
static void prefetch_rank(struct discovery *d, unsigned rank, struct search *search)
{
	size_t limit = rank < 2 ? PY_DISCOVER_MAX_NAMED_READS : PY_DISCOVER_MAX_UNNAMED_READS;
	size_t done = rank < 2 ? search->examined_named : search->examined, count = 0, read;
	const struct proc_map **maps;

	if (!d->cache || done >= limit)
		return;
	maps = malloc(d->maps->count * sizeof(*maps));
	if (!maps)
		return; /* each lookup reads its own */
	for (size_t i = 0; i < d->maps->count; i++)
		if (is_code_of_file(&d->maps->maps[i]) && name_rank(d->maps->maps[i].path) == rank)
			maps[count++] = &d->maps->maps[i];
	read = py_runtime_file_prefetch(d->cache, d->pid, maps, count, limit - done);
	free(maps);
	search->examined += read;
	if (rank < 2)
		search->examined_named += read;
}

static int find_runtime_file(struct discovery *d)
{
	struct search search = { 0 };

	for (unsigned rank = 0; rank < 3; rank++) {
		prefetch_rank(d, rank, &search);
		for (size_t i = 0; i < d->maps->count; i++) {
			const struct proc_map *map = &d->maps->maps[i];

			if (is_code_of_file(map) && name_rank(map->path) == rank && examine(d, map, &search))
				return 0;
		}
	}
	return no_runtime(d, &search);
}

static int open_runtime_elf(struct discovery *d)
{
	const struct proc_map *first;
	int err = find_runtime_file(d), fd;

	if (err)
		return err;
	first = proc_maps_first_of(d->maps, d->runtime_path);
	fd = first ? elf_file_map_fd(d->pid, first) : -ENOENT;
	if (fd < 0)
		return cannot_open(d, d->runtime_path, fd);
	/* its program headers only, with bounded reads: the worker read the rest */
	err = elf_notes_load_segments(fd, d->segments, ELF_FILE_MAX_LOAD_SEGMENTS, &d->segment_count);
	close(fd);
	return err ? cannot_open(d, d->runtime_path, err) : 0;
}

static int compute_load_bias(struct discovery *d)
{
	const struct proc_map *first = proc_maps_first_of(d->maps, d->runtime_path);
	int err = first ? elf_load_bias(d->segments, d->segment_count, first->start, first->offset, &d->bias)
			: -ENOENT;

	if (err)
		return errbuf_format(d->err_text, d->err_len, -ENOEXEC,
				     "pid %d: cannot compute the load address of %s", (int)d->pid,
				     d->runtime_path);
	return 0;
}

/*
 * A process that has just exec'd may have libpython mapped but not yet relocated: its
 * _PyRuntime then holds link-time pointers, and following one faults. That is a retry
 * (bounded by the caller's wait for the runtime), as for a runtime not initialised yet.
 */
static int read_failed(const struct discovery *d, int err, const char *what)
{
	if (err == -ESRCH)
		return errbuf_format(d->err_text, d->err_len, -ESRCH,
				     "pid %d: process exited during discovery", (int)d->pid);
	if (err == -EFAULT)
		return errbuf_format(d->err_text, d->err_len, -EAGAIN,
				     "pid %d: cannot read %s yet: %s (not relocated or initialised yet?); retry",
				     (int)d->pid, what, strerror(-err));
	return errbuf_format(d->err_text, d->err_len, err, "pid %d: cannot read %s: %s", (int)d->pid, what,
			     strerror(-err));
}

static void set_version(struct py_target *target, uint32_t version_hex)
{
	target->config.version_hex = version_hex;
	target->major = version_hex >> 24;
	target->minor = (version_hex >> 16) & 0xff;
	target->micro = (version_hex >> 8) & 0xff;
}

/* 3.13+: everything comes from the _Py_DebugOffsets at the start of _PyRuntime. */
static int configure_from_debug_offsets(struct discovery *d, const uint8_t *blob, size_t len, struct py_target *target,
					struct state_layouts *layouts)
{
	char reason[256];
	uint32_t version_hex;
	int err = py_offsets_from_debug(blob, len, &target->config.off, &version_hex, reason, sizeof(reason));

	if (!err)
		err = py_gil_layout_from_debug(blob, len, &layouts->gil, reason, sizeof(reason));
	if (!err)
		err = py_gc_layout_from_debug(blob, len, &layouts->gc, reason, sizeof(reason));
	if (!err)
		err = py_code_stamp_from_debug(blob, len, &layouts->code_stamp, reason, sizeof(reason));
	/* 3.13 gives no coroutine layouts: tasks are not read there */
	if (!err && py_asyncio_layout_from_debug(blob, len, &target->asyncio, reason, sizeof(reason)))
		target->asyncio = (struct py_asyncio_layout){ .known = false };
	if (err)
		return errbuf_format(d->err_text, d->err_len, err == -ENOTSUP ? -ENOTSUP : -ENOEXEC,
				     "pid %d: %s: %s", (int)d->pid, d->runtime_path, reason);
	set_version(target, version_hex);
	return 0;
}

static int configure_from_table(struct discovery *d, struct py_target *target, struct state_layouts *layouts)
{
	const struct py_offsets *off;
	uint64_t version_hex;
	int err;

	if (d->file.sym.has_py_version) {
		err = target_mem_read_u64(d->pid, d->bias + d->file.sym.py_version, &version_hex);
		if (err)
			return read_failed(d, err, "Py_Version");
		set_version(target, (uint32_t)version_hex);
	} else {
		if (!d->file.major)
			return errbuf_format(d->err_text, d->err_len, -ENOTSUP,
					     "pid %d: cannot tell the CPython version of %s (no Py_Version, no SONAME or version string naming it)",
					     (int)d->pid, d->runtime_path);
		/* the micro only labels output; an unknown one is not a reason to give up */
		set_version(target, (d->file.major << 24) | (d->file.minor << 16) | (d->file.micro << 8) | 0xf0);
	}
	off = py_offsets_for_version(target->major, target->minor);
	/* 3.13+ carry _Py_DebugOffsets at the head of _PyRuntime: without their cookie, the loader
	 * has not mapped the data segment in place yet (a process that has just exec'd). */
	if (!off && (target->major > 3 || (target->major == 3 && target->minor >= 13)))
		return errbuf_format(d->err_text, d->err_len, -EAGAIN,
				     "pid %d: CPython %u.%u.%u's debug offsets are not in place yet; retry",
				     (int)d->pid, target->major, target->minor, target->micro);
	if (!off)
		return errbuf_format(d->err_text, d->err_len, -ENOTSUP,
				     "pid %d: CPython %u.%u.%u is not supported (" SUPPORTED_VERSIONS ")",
				     (int)d->pid, target->major, target->minor, target->micro);
	target->config.off = *off;
	layouts->gil = *py_gil_layout_for_version(target->major, target->minor);
	layouts->gc = *py_gc_layout_for_version(target->major, target->minor);
	return 0;
}

static int configure_offsets(struct discovery *d, struct py_target *target, struct state_layouts *layouts)
{
	uint8_t blob[PY_DEBUG_OFFSETS_MAX_SIZE];
	int err;

	if (d->file.sym.has_runtime) {
		err = target_mem_read(d->pid, d->bias + d->file.sym.runtime, blob, sizeof(blob));
		if (err)
			return read_failed(d, err, "_PyRuntime");
		if (!memcmp(blob, PY_DEBUG_OFFSETS_COOKIE, strlen(PY_DEBUG_OFFSETS_COOKIE)))
			return configure_from_debug_offsets(d, blob, sizeof(blob), target, layouts);
	}
	return configure_from_table(d, target, layouts);
}

static int locate_interp_head(struct discovery *d, struct py_target *target)
{
	const struct py_offsets *off = &target->config.off;

	if (off->runtime_interpreters_head != PY_OFF_NONE && d->file.sym.has_runtime) {
		target->config.interp_head_addr = d->bias + d->file.sym.runtime + off->runtime_interpreters_head;
		return 0;
	}
	if (off->runtime_interpreters_head == PY_OFF_NONE && d->file.sym.has_interp_head) {
		target->config.interp_head_addr = d->bias + d->file.sym.interp_head;
		return 0;
	}
	return errbuf_format(d->err_text, d->err_len, -ENOEXEC,
			     "pid %d: CPython %u.%u in %s lacks the %s symbol (stripped?)", (int)d->pid,
			     target->major, target->minor, d->runtime_path,
			     off->runtime_interpreters_head == PY_OFF_NONE ? "interp_head" : "_PyRuntime");
}

static int locate_gil(struct discovery *d, const struct py_gil_layout *gil, uint64_t main_interp,
		      struct py_target *target)
{
	struct py_proc_config *config = &target->config;
	uint64_t gil_state = 0;
	int err;

	switch (gil->where) {
	case PY_GIL_STATIC_SYMBOLS:
		if (!d->file.sym.has_static_gil)
			return 0;
		config->gil_holder_addr = d->bias + d->file.sym.gil_last_holder;
		config->gil_locked_addr = d->bias + d->file.sym.gil_locked;
		break;
	case PY_GIL_CURRENT_TSTATE:
		if (!d->file.sym.has_current_tstate)
			return 0;
		/* The pointer is set exactly while a thread holds the GIL, so its low half
		 * serves as the locked flag: BPF covers both with one read. */
		config->gil_holder_addr = d->bias + d->file.sym.current_tstate;
		config->gil_locked_addr = d->bias + d->file.sym.current_tstate;
		break;
	case PY_GIL_IN_RUNTIME:
		config->gil_holder_addr = d->bias + d->file.sym.runtime + gil->holder;
		config->gil_locked_addr = d->bias + d->file.sym.runtime + gil->locked;
		break;
	case PY_GIL_VIA_INTERP_POINTER:
		/* per-interpreter GIL: the main interpreter's (a thread in a subinterpreter with a GIL of
		 * its own is never seen holding it) */
		err = target_mem_read_u64(d->pid, main_interp + gil->pointer, &gil_state);
		if (err)
			return read_failed(d, err, "the interpreter's GIL pointer");
		if (!gil_state)
			return 0;
		config->gil_holder_addr = gil_state + gil->holder;
		config->gil_locked_addr = gil_state + gil->locked;
		break;
	default:
		return 0;
	}
	config->flags |= PY_PROC_HAS_GIL_HOLDER;
	if (gil->requested) {
		config->tstate_gil_requested = gil->requested;
		config->flags |= PY_PROC_HAS_GIL_REQUEST;
	}
	return 0;
}

/* main_interp: the main interpreter, whose collector is the one running in its threads (a
 * subinterpreter's collections are not flagged). */
static void locate_gc(struct discovery *d, const struct py_gc_layout *gc, uint64_t main_interp,
		      struct py_target *target)
{
	struct py_proc_config *config = &target->config;

	switch (gc->where) {
	case PY_GC_STATIC_SYMBOL:
		if (!d->file.sym.has_gc_collecting)
			return;
		config->gc_collecting_addr = d->bias + d->file.sym.gc_collecting;
		break;
	case PY_GC_IN_RUNTIME:
		config->gc_collecting_addr = d->bias + d->file.sym.runtime + gc->collecting;
		break;
	case PY_GC_IN_INTERP:
		config->gc_collecting_addr = main_interp + gc->collecting;
		break;
	default:
		return;
	}
	config->flags |= PY_PROC_HAS_GC_FLAG;
}

/* At most this many interpreters are followed to the main one (a longer list is hostile or cyclic). */
#define MAIN_INTERP_SEARCH_MAX 256

/*
 * The main interpreter: the last of the list, as each new interpreter is put at its head (2.7
 * and 3.x alike). Its GIL and collector are the ones its threads use; a subinterpreter made
 * before we attach would otherwise stand in for it (3.12+: with a GIL of its own). The head
 * where the list ends early or does not end.
 */
/*
 * The main interpreter's code-object counter, which lets BPF trust a code object's identity
 * unread while no code object is made: 3.12's static _Py_next_func_version (where the file's
 * symbols name it), 3.13's in the interpreter state. PYBPFPROF_NO_CODE_STAMP (any value)
 * leaves it out, so that every walk reads every code object: for comparing the two
 * (tests/test_stack_fast_path.c).
 */
static void locate_code_stamp(const struct discovery *d, uint32_t interp_offset, uint64_t main_interp,
			      struct py_target *target)
{
	target->config.code_stamp_addr = 0;
	if (getenv("PYBPFPROF_NO_CODE_STAMP"))
		return;
	if (target->major == 3 && target->minor == 12 && d->file.sym.has_code_counter)
		target->config.code_stamp_addr = d->bias + d->file.sym.code_counter;
	else if (interp_offset != PY_OFF_NONE && main_interp != 0)
		target->config.code_stamp_addr = main_interp + interp_offset;
}

static int find_main_interp(struct discovery *d, const struct py_target *target, uint64_t head,
			    uint64_t *main_interp)
{
	uint64_t interp = head;

	*main_interp = head;
	for (unsigned seen = 0; seen < MAIN_INTERP_SEARCH_MAX; seen++) {
		uint64_t next = 0;
		int err = target_mem_read_u64(d->pid, interp + target->config.off.interp_next, &next);

		if (err)
			return read_failed(d, err, "the interpreter list");
		if (next == 0) {
			*main_interp = interp;
			return 0;
		}
		interp = next;
	}
	return 0;
}

/*
 * Where the evaluation function runs: its range from the runtime file, believed only where it
 * lies in one executable mapping of that file (the file is the target's: a range it lies about
 * costs at most the merge of this target's stacks, which counts what it cannot pair).
 */
static void locate_eval_function(const struct discovery *d, struct py_target *target)
{
	const struct py_runtime_symbols *sym = &d->file.sym;
	uint64_t start, end;

	target->eval_start = target->eval_end = 0;
	if (!sym->has_eval_function || sym->eval_function > UINT64_MAX - d->bias ||
	    sym->eval_function + d->bias > UINT64_MAX - sym->eval_function_size)
		return;
	start = d->bias + sym->eval_function;
	end = start + sym->eval_function_size;
	for (size_t i = 0; i < d->maps->count; i++) {
		const struct proc_map *map = &d->maps->maps[i];

		if (start < map->start || start >= map->end)
			continue;
		if (end <= map->end && map->perms[2] == 'x' && proc_map_is_file(map, &d->runtime_file)) {
			target->eval_start = start;
			target->eval_end = end;
		}
		return;
	}
}

static int describe_runtime(struct discovery *d, struct py_target *target)
{
	struct state_layouts layouts = { .gil = { .where = PY_GIL_UNKNOWN }, .gc = { .where = PY_GC_UNKNOWN },
					 .code_stamp = PY_OFF_NONE };
	uint64_t first_interp = 0, main_interp = 0;
	int err = compute_load_bias(d);

	if (!err)
		err = configure_offsets(d, target, &layouts);
	if (!err) {
		target->config.code_version = py_code_version_offset(target->major, target->minor, &target->config.off);
		err = locate_interp_head(d, target);
	}
	if (err)
		return err;
	err = target_mem_read_u64(d->pid, target->config.interp_head_addr, &first_interp);
	if (err)
		return read_failed(d, err, "the interpreter list head");
	if (!first_interp)
		return errbuf_format(d->err_text, d->err_len, -EAGAIN,
				     "pid %d: CPython %u.%u.%u runtime not initialised yet; retry",
				     (int)d->pid, target->major, target->minor, target->micro);
	err = find_main_interp(d, target, first_interp, &main_interp);
	if (err)
		return err;
	target->runtime_file = d->runtime_file;
	locate_eval_function(d, target);
	locate_gc(d, &layouts.gc, main_interp, target);
	locate_code_stamp(d, layouts.code_stamp, main_interp, target);
	return locate_gil(d, &layouts.gil, main_interp, target);
}

/* The module's offsets from a file that carries them: the config then has BPF read the running task. */
static bool take_asyncio_module(struct py_target *target, const struct py_runtime_file *file)
{
	if (!file->has_asyncio_debug ||
	    py_asyncio_layout_add_module(&target->asyncio, file->asyncio_debug, PY_ASYNCIO_DEBUG_WORDS))
		return false;
	target->config.tstate_running_task = target->asyncio.tstate_running_task;
	target->config.task_name = target->asyncio.task_name;
	target->config.flags |= PY_PROC_HAS_ASYNCIO;
	return true;
}

/* "_asyncio.cpython-314-x86_64-linux-gnu.so", "_asyncio.so": the extension of a shared build. */
static bool is_asyncio_extension(const char *path)
{
	return !strncmp(proc_maps_basename(path), "_asyncio.", strlen("_asyncio."));
}

static int find_asyncio_module(struct py_runtime_file_cache *cache, const struct proc_maps *maps,
			       struct py_target *target)
{
	int err = -ENOENT;

	for (size_t i = 0; i < maps->count; i++) {
		const struct proc_map *map = &maps->maps[i];
		struct py_runtime_file file;

		if (!is_code_of_file(map) || !is_asyncio_extension(map->path))
			continue;
		err = py_runtime_file_lookup(cache, target->pid, map, &file);
		if (err)
			continue;
		return take_asyncio_module(target, &file) ? 0 : -ENOENT;
	}
	return err;
}

int py_discover_asyncio(struct py_runtime_file_cache *cache, struct py_target *target)
{
	struct proc_maps maps;
	int err;

	if (target->asyncio.ob_type == 0)
		return -ENOTSUP;
	if (target->asyncio.known)
		return 0;
	err = proc_maps_read(target->pid, &maps);
	if (err)
		return err;
	err = find_asyncio_module(cache, &maps, target);
	proc_maps_free(&maps);
	return err;
}

int py_discover_runtime(pid_t pid, struct py_target *target, char *err_text, size_t err_len)
{
	return py_discover_runtime_cached(NULL, pid, target, err_text, err_len);
}

int py_discover_runtime_cached(struct py_runtime_file_cache *cache, pid_t pid, struct py_target *target,
			       char *err_text, size_t err_len)
{
	struct proc_maps maps;
	struct discovery d = { .pid = pid, .maps = &maps, .cache = cache, .err_text = err_text, .err_len = err_len,
 };
	int err;

	memset(target, 0, sizeof(*target));
	target->pid = pid;
	if (err_len)
		err_text[0] = 0;
	err = proc_maps_read(pid, &maps);
	if (err)
		return errbuf_format(err_text, err_len, err,
				     err == -ESRCH ? "pid %d: no such process" : "pid %d: cannot read its maps: %s",
				     (int)pid, strerror(-err));
	err = open_runtime_elf(&d);
	if (!err)
		err = describe_runtime(&d, target);
	/* 3.11-3.13 publish no asyncio layout: theirs were generated from their debug information */
	if (!err && target->major == 3 && target->minor >= 11 && target->minor <= 13) {
		if (py_asyncio_layout_for_version(target->major, target->minor, &target->asyncio) == 0) {
			const struct py_asyncio_callbacks *c = &target->asyncio.callbacks;

			target->config.gen_iframe = target->asyncio.gen_iframe;
			target->config.task_coro = target->asyncio.task_coro;
			target->config.task_name = target->asyncio.task_name;
			target->config.dict_keys = c->dict_keys;
			target->config.keys_log2_index_bytes = c->keys_log2_index_bytes;
			target->config.keys_nentries = c->keys_nentries;
			target->config.keys_indices = c->keys_indices;
			target->config.flags |= PY_PROC_CORO_FROM_FRAMES;
		}
	}
	/* built into the runtime (3.15), or its extension already mapped (3.14 with asyncio imported) */
	else if (!err && target->asyncio.ob_type && !take_asyncio_module(target, &d.file))
		(void)find_asyncio_module(cache, &maps, target);
	proc_maps_free(&maps);
	return err;
}
