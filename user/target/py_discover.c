// SPDX-License-Identifier: MIT
#include "target/py_discover.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "target/elf_file.h"
#include "target/proc_maps.h"
#include "target/target_mem.h"
#include "util/array.h"
#include "util/errbuf.h"

/* Distinct files a process maps, looked at when naming the runtime; more is not a real process. */
#define MAX_CANDIDATES 16

#define SUPPORTED_VERSIONS "offsets are known for 2.7 and 3.6-3.12; 3.13+ are read from the target"

/* What the runtime ELF provides, as link-time addresses. */
struct runtime_symbols {
	bool has_runtime, has_interp_head, has_py_version, has_static_gil, has_current_tstate, has_gc_collecting;
	uint64_t runtime;          /* _PyRuntime */
	uint64_t interp_head;      /* 2.7 / 3.6: static PyInterpreterState *interp_head */
	uint64_t py_version;       /* 3.11+: const unsigned long Py_Version */
	uint64_t gil_last_holder;  /* 3.6: static gil state */
	uint64_t gil_locked;
	uint64_t current_tstate;   /* 2.7: _PyThreadState_Current */
	uint64_t gc_collecting;    /* 2.7 / 3.6: gcmodule.c's static collecting */
};

/* Where the thread-state extras live: the GIL's holder and the GC's collecting flag. */
struct state_layouts {
	struct py_gil_layout gil;
	struct py_gc_layout gc;
};

struct discovery {
	pid_t pid;
	const struct proc_maps *maps;
	const char *runtime_path;
	struct elf_file elf;
	struct runtime_symbols sym;
	uint64_t bias;
	char *err_text;
	size_t err_len;
};

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

/* libpython first: with a shared build the binary only has a stub main. */
static size_t python_candidates(const struct proc_maps *maps, const char **out, size_t max)
{
	size_t count = 0;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < maps->count && count < max; i++) {
			const char *path = maps->maps[i].path;
			const char *name = proc_maps_basename(path);
			bool wanted = pass == 0 ? is_libpython(name) : is_python_binary(name) && !is_libpython(name);

			if (path[0] == '/' && wanted && !already_listed(out, count, path))
				out[count++] = path;
		}
	}
	return count;
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

		if (path[0] != '/' || !strchr(maps->maps[i].perms, 'x') || already_listed(listed, count, path))
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

static void find_runtime_symbols(const struct elf_file *elf, struct runtime_symbols *sym)
{
	uint64_t size;

	memset(sym, 0, sizeof(*sym));
	/* stripped 3.10+ builds still have the section that holds the runtime */
	sym->has_runtime = !elf_file_symbol(elf, "_PyRuntime", &sym->runtime, NULL) ||
			   !elf_file_section(elf, ".PyRuntime", &sym->runtime, &size);
	sym->has_interp_head = !elf_file_symbol(elf, "interp_head", &sym->interp_head, NULL);
	sym->has_py_version = !elf_file_symbol(elf, "Py_Version", &sym->py_version, NULL);
	sym->has_static_gil = !elf_file_symbol(elf, "gil_last_holder", &sym->gil_last_holder, NULL) &&
			      !elf_file_symbol(elf, "gil_locked", &sym->gil_locked, NULL);
	sym->has_current_tstate = !elf_file_symbol(elf, "_PyThreadState_Current", &sym->current_tstate, NULL);
	sym->has_gc_collecting = !elf_file_symbol(elf, "collecting", &sym->gc_collecting, NULL);
}

static int open_runtime_elf(struct discovery *d)
{
	const char *candidates[MAX_CANDIDATES];
	size_t count = python_candidates(d->maps, candidates, MAX_CANDIDATES);
	bool saw_libpython = false;
	int open_err = 0;

	for (size_t i = 0; i < count; i++) {
		const struct proc_map *map = proc_maps_first_of(d->maps, candidates[i]);
		int err = elf_file_open_map(&d->elf, d->pid, map);

		saw_libpython |= is_libpython(proc_maps_basename(candidates[i]));
		if (err) {
			open_err = err;
			continue;
		}
		find_runtime_symbols(&d->elf, &d->sym);
		if (d->sym.has_runtime || d->sym.has_interp_head) {
			d->runtime_path = candidates[i];
			return 0;
		}
		elf_file_close(&d->elf);
	}
	if (count == 0) {
		char searched[1024];

		describe_searched(d->maps, searched, sizeof(searched));
		return errbuf_format(d->err_text, d->err_len, -ENOEXEC,
				     "pid %d: not a Python process (no libpython or python binary in its maps; searched %s)",
				     (int)d->pid, searched);
	}
	if (open_err && open_err != -ENOEXEC)
		return errbuf_format(d->err_text, d->err_len, open_err,
				     "pid %d: cannot open %s (through /proc/%d/map_files or its root): %s",
				     (int)d->pid, candidates[0], (int)d->pid,
				     open_err == -EFBIG ? "larger than the 512 MiB read for an ELF file" : strerror(-open_err));
	/* a python binary without the runtime links libpython, which the loader has not mapped yet */
	if (!saw_libpython)
		return errbuf_format(d->err_text, d->err_len, -EAGAIN,
				     "pid %d: %s is mapped but libpython is not (yet); retry", (int)d->pid,
				     candidates[0]);
	return errbuf_format(d->err_text, d->err_len, -ENOEXEC,
			     "pid %d: not a Python process (no _PyRuntime or interp_head symbol in %s)",
			     (int)d->pid, candidates[0]);
}

static int compute_load_bias(struct discovery *d)
{
	const struct proc_map *first = proc_maps_first_of(d->maps, d->runtime_path);
	int err = first ? elf_file_load_bias(&d->elf, first->start, first->offset, &d->bias) : -ENOENT;

	if (err)
		return errbuf_format(d->err_text, d->err_len, -ENOEXEC,
				     "pid %d: cannot compute the load address of %s", (int)d->pid,
				     d->runtime_path);
	return 0;
}

static int read_failed(const struct discovery *d, int err, const char *what)
{
	if (err == -ESRCH)
		return errbuf_format(d->err_text, d->err_len, -ESRCH,
				     "pid %d: process exited during discovery", (int)d->pid);
	return errbuf_format(d->err_text, d->err_len, err, "pid %d: cannot read %s: %s", (int)d->pid, what,
			     strerror(-err));
}

/* "3.9" in libpython3.9.so.1.0, python3.9, libpython3.6m.so, python2.7 */
static bool version_from_name(const char *path, unsigned *major, unsigned *minor)
{
	const char *name = proc_maps_basename(path);
	const char *digits = strstr(name, "python");

	return digits && sscanf(digits + strlen("python"), "%u.%u", major, minor) == 2;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * PY_VERSION ("3.9.18") is a string literal in .rodata, though the linker may
 * have merged it as the tail of a longer string such as a path ending in it;
 * so look for "M.m.<digits>" ending a string and not preceded by a digit.
 */
static bool micro_from_rodata(const struct elf_file *elf, unsigned major, unsigned minor, unsigned *micro)
{
	const char *data;
	const void *raw;
	size_t len;
	char prefix[24];
	size_t prefix_len;

	if (elf_file_section_data(elf, ".rodata", &raw, &len))
		return false;
	data = raw;
	prefix_len = (size_t)snprintf(prefix, sizeof(prefix), "%u.%u.", major, minor);
	for (size_t i = 0; i + prefix_len < len; i++) {
		size_t end = i + prefix_len;
		unsigned value = 0;

		if (memcmp(data + i, prefix, prefix_len) || (i > 0 && (is_digit(data[i - 1]) || data[i - 1] == '.')))
			continue;
		while (end < len && end - i - prefix_len < 3 && is_digit(data[end]))
			value = value * 10 + (unsigned)(data[end++] - '0');
		if (end > i + prefix_len && end < len && data[end] == 0) {
			*micro = value;
			return true;
		}
	}
	return false;
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
	if (err)
		return errbuf_format(d->err_text, d->err_len, err == -ENOTSUP ? -ENOTSUP : -ENOEXEC,
				     "pid %d: %s: %s", (int)d->pid, d->runtime_path, reason);
	set_version(target, version_hex);
	return 0;
}

static int configure_from_table(struct discovery *d, struct py_target *target, struct state_layouts *layouts)
{
	const struct py_offsets *off;
	unsigned major = 0, minor = 0, micro = 0;
	uint64_t version_hex;
	int err;

	if (d->sym.has_py_version) {
		err = target_mem_read_u64(d->pid, d->bias + d->sym.py_version, &version_hex);
		if (err)
			return read_failed(d, err, "Py_Version");
		set_version(target, (uint32_t)version_hex);
	} else {
		if (!version_from_name(d->runtime_path, &major, &minor))
			return errbuf_format(d->err_text, d->err_len, -ENOTSUP,
					     "pid %d: cannot tell the CPython version of %s (no Py_Version, no version in the file name)",
					     (int)d->pid, d->runtime_path);
		/* the micro only labels output; an unknown one is not a reason to give up */
		micro_from_rodata(&d->elf, major, minor, &micro);
		set_version(target, (major << 24) | (minor << 16) | (micro << 8) | 0xf0);
	}
	off = py_offsets_for_version(target->major, target->minor);
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

	if (d->sym.has_runtime) {
		err = target_mem_read(d->pid, d->bias + d->sym.runtime, blob, sizeof(blob));
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

	if (off->runtime_interpreters_head != PY_OFF_NONE && d->sym.has_runtime) {
		target->config.interp_head_addr = d->bias + d->sym.runtime + off->runtime_interpreters_head;
		return 0;
	}
	if (off->runtime_interpreters_head == PY_OFF_NONE && d->sym.has_interp_head) {
		target->config.interp_head_addr = d->bias + d->sym.interp_head;
		return 0;
	}
	return errbuf_format(d->err_text, d->err_len, -ENOEXEC,
			     "pid %d: CPython %u.%u in %s lacks the %s symbol (stripped?)", (int)d->pid,
			     target->major, target->minor, d->runtime_path,
			     off->runtime_interpreters_head == PY_OFF_NONE ? "interp_head" : "_PyRuntime");
}

static int locate_gil(struct discovery *d, const struct py_gil_layout *gil, uint64_t first_interp,
		      struct py_target *target)
{
	struct py_proc_config *config = &target->config;
	uint64_t gil_state = 0;
	int err;

	switch (gil->where) {
	case PY_GIL_STATIC_SYMBOLS:
		if (!d->sym.has_static_gil)
			return 0;
		config->gil_holder_addr = d->bias + d->sym.gil_last_holder;
		config->gil_locked_addr = d->bias + d->sym.gil_locked;
		break;
	case PY_GIL_CURRENT_TSTATE:
		if (!d->sym.has_current_tstate)
			return 0;
		/* The pointer is set exactly while a thread holds the GIL, so its low half
		 * serves as the locked flag: BPF covers both with one read. */
		config->gil_holder_addr = d->bias + d->sym.current_tstate;
		config->gil_locked_addr = d->bias + d->sym.current_tstate;
		break;
	case PY_GIL_IN_RUNTIME:
		config->gil_holder_addr = d->bias + d->sym.runtime + gil->holder;
		config->gil_locked_addr = d->bias + d->sym.runtime + gil->locked;
		break;
	case PY_GIL_VIA_INTERP_POINTER:
		/* per-interpreter GIL: the first interpreter's, which is the main one's unless subinterpreters
		 * with their own GIL exist */
		err = target_mem_read_u64(d->pid, first_interp + gil->pointer, &gil_state);
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

/* first_interp: the main interpreter, whose collector is the one running in its threads (a
 * subinterpreter's collections are not flagged). */
static void locate_gc(struct discovery *d, const struct py_gc_layout *gc, uint64_t first_interp,
		      struct py_target *target)
{
	struct py_proc_config *config = &target->config;

	switch (gc->where) {
	case PY_GC_STATIC_SYMBOL:
		if (!d->sym.has_gc_collecting)
			return;
		config->gc_collecting_addr = d->bias + d->sym.gc_collecting;
		break;
	case PY_GC_IN_RUNTIME:
		config->gc_collecting_addr = d->bias + d->sym.runtime + gc->collecting;
		break;
	case PY_GC_IN_INTERP:
		config->gc_collecting_addr = first_interp + gc->collecting;
		break;
	default:
		return;
	}
	config->flags |= PY_PROC_HAS_GC_FLAG;
}

static int describe_runtime(struct discovery *d, struct py_target *target)
{
	struct state_layouts layouts = { .gil = { .where = PY_GIL_UNKNOWN }, .gc = { .where = PY_GC_UNKNOWN } };
	uint64_t first_interp = 0;
	int err = compute_load_bias(d);

	if (!err)
		err = configure_offsets(d, target, &layouts);
	if (!err)
		err = locate_interp_head(d, target);
	if (err)
		return err;
	err = target_mem_read_u64(d->pid, target->config.interp_head_addr, &first_interp);
	if (err)
		return read_failed(d, err, "the interpreter list head");
	if (!first_interp)
		return errbuf_format(d->err_text, d->err_len, -EAGAIN,
				     "pid %d: CPython %u.%u.%u runtime not initialised yet; retry",
				     (int)d->pid, target->major, target->minor, target->micro);
	snprintf(target->runtime_path, sizeof(target->runtime_path), "%s", d->runtime_path);
	locate_gc(d, &layouts.gc, first_interp, target);
	return locate_gil(d, &layouts.gil, first_interp, target);
}

int py_discover_runtime(pid_t pid, struct py_target *target, char *err_text, size_t err_len)
{
	struct proc_maps maps;
	struct discovery d = { .pid = pid, .maps = &maps, .err_text = err_text, .err_len = err_len, .elf = { .fd = -1 } };
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
	if (!err) {
		err = describe_runtime(&d, target);
		elf_file_close(&d.elf);
	}
	proc_maps_free(&maps);
	return err;
}
