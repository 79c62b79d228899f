// SPDX-License-Identifier: MIT
#include "python/py_runtime_file.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parser/parser_client.h"
#include "parser/parser_protocol.h"
#include "python/py_offsets.h"
#include "util/array.h"
#include "util/hash.h"

/* Version strings looked at in one file's .rodata; a libpython has one. */
#define MAX_VERSION_STRINGS 16

enum runtime_query {
	QUERY_RUNTIME,
	QUERY_INTERP_HEAD,
	QUERY_PY_VERSION,
	QUERY_GIL_LAST_HOLDER,
	QUERY_GIL_LOCKED,
	QUERY_CURRENT_TSTATE,
	QUERY_GC_COLLECTING,
	QUERY_COUNT,
};

static const char *const query_names[QUERY_COUNT] = {
	[QUERY_RUNTIME] = "_PyRuntime",
	[QUERY_INTERP_HEAD] = "interp_head",
	[QUERY_PY_VERSION] = "Py_Version",
	[QUERY_GIL_LAST_HOLDER] = "gil_last_holder",
	[QUERY_GIL_LOCKED] = "gil_locked",
	[QUERY_CURRENT_TSTATE] = "_PyThreadState_Current",
	[QUERY_GC_COLLECTING] = "collecting",
};

/* What a python binary or an embedding application imports from libpython. */
static const char *const api_prefixes[] = { "Py", "_Py" };

/* 3.12's code-object counter is a static variable: only an unstripped .symtab has it. Any
 * 3.7+ runtime is asked (the version is not known yet); the answer is kept with the file. */
static void find_code_counter(const struct elf_file *elf, struct py_runtime_symbols *sym)
{
	struct elf_symbol_query counter = { .name = "_Py_next_func_version" };

	if (!sym->has_runtime || elf_file_lookup_symbols(elf, ELF_SYMBOLS_STATIC, &counter, 1) <= 0)
		return;
	sym->has_code_counter = counter.found;
	sym->code_counter = counter.addr;
}

/*
 * .dynsym first: it is small, and every runtime from 3.7 exports _PyRuntime there. The
 * static symbols of 2.7 and 3.6 (interp_head, the GIL's) and of static builds that export
 * nothing are only in .symtab, read when .dynsym did not show a 3.7+ runtime.
 */
static void find_runtime_symbols(const struct elf_file *elf, struct py_runtime_symbols *sym)
{
	struct elf_symbol_query queries[QUERY_COUNT];
	uint64_t size;

	memset(queries, 0, sizeof(queries));
	for (unsigned q = 0; q < QUERY_COUNT; q++)
		queries[q].name = query_names[q];
	elf_file_lookup_symbols(elf, ELF_SYMBOLS_DYNAMIC, queries, QUERY_COUNT);
	if (!queries[QUERY_RUNTIME].found && !queries[QUERY_PY_VERSION].found)
		elf_file_lookup_symbols(elf, ELF_SYMBOLS_STATIC, queries, QUERY_COUNT);
	memset(sym, 0, sizeof(*sym));
	sym->has_runtime = queries[QUERY_RUNTIME].found;
	sym->runtime = queries[QUERY_RUNTIME].addr;
	/* stripped 3.10+ builds still have the section that holds the runtime */
	if (!sym->has_runtime)
		sym->has_runtime = !elf_file_section(elf, ".PyRuntime", &sym->runtime, &size);
	sym->has_interp_head = queries[QUERY_INTERP_HEAD].found;
	sym->interp_head = queries[QUERY_INTERP_HEAD].addr;
	sym->has_py_version = queries[QUERY_PY_VERSION].found;
	sym->py_version = queries[QUERY_PY_VERSION].addr;
	sym->has_static_gil = queries[QUERY_GIL_LAST_HOLDER].found && queries[QUERY_GIL_LOCKED].found;
	sym->gil_last_holder = queries[QUERY_GIL_LAST_HOLDER].addr;
	sym->gil_locked = queries[QUERY_GIL_LOCKED].addr;
	sym->has_current_tstate = queries[QUERY_CURRENT_TSTATE].found;
	sym->current_tstate = queries[QUERY_CURRENT_TSTATE].addr;
	sym->has_gc_collecting = queries[QUERY_GC_COLLECTING].found;
	sym->gc_collecting = queries[QUERY_GC_COLLECTING].addr;
	find_code_counter(elf, sym);
}

/*
 * The evaluation function's code: 2.7's PyEval_EvalFrameEx, else _PyEval_EvalFrameDefault (in
 * 3.x the former is a small wrapper around it). Both are exported: .dynsym first, .symtab for a
 * build that exports nothing. A size past PY_EVAL_FUNCTION_MAX_BYTES, or one that wraps, is no
 * range. major: the version the file names (0: unknown, 3.11+ say theirs in memory).
 */
static void find_eval_function(const struct elf_file *elf, unsigned major, struct py_runtime_symbols *sym)
{
	struct elf_symbol_query query = { .name = major == 2 ? "PyEval_EvalFrameEx" : "_PyEval_EvalFrameDefault" };

	if (elf_file_lookup_symbols(elf, ELF_SYMBOLS_DYNAMIC, &query, 1) <= 0)
		elf_file_lookup_symbols(elf, ELF_SYMBOLS_STATIC, &query, 1);
	if (!query.found || query.size == 0 || query.size > PY_EVAL_FUNCTION_MAX_BYTES ||
	    query.addr > UINT64_MAX - query.size)
		return;
	sym->has_eval_function = true;
	sym->eval_function = query.addr;
	sym->eval_function_size = query.size;
}

struct version {
	unsigned major, minor, micro;
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Up to max_digits digits at text[*at] (before end) as a number; false if none. */
static bool read_number(const char *text, size_t end, size_t *at, unsigned max_digits, unsigned *value)
{
	size_t start = *at;

	*value = 0;
	while (*at < end && *at - start < max_digits && is_digit(text[*at]))
		*value = *value * 10 + (unsigned)(text[(*at)++] - '0');
	return *at > start;
}

/* "M.m.u" at text[i], M being 2 or 3, ending a string or followed by " (" as sys.version is. */
static bool version_at(const char *text, size_t len, size_t i, struct version *out)
{
	size_t at = i;

	if ((text[i] != '2' && text[i] != '3') || (i > 0 && (is_digit(text[i - 1]) || text[i - 1] == '.')))
		return false;
	if (!read_number(text, len, &at, 1, &out->major) || at >= len || text[at++] != '.' ||
	    !read_number(text, len, &at, 2, &out->minor) || at >= len || text[at++] != '.' ||
	    !read_number(text, len, &at, 3, &out->micro) || at >= len)
		return false;
	return text[at] == 0 || (at + 1 < len && text[at] == ' ' && text[at + 1] == '(');
}

/*
 * PY_VERSION ("3.9.18") is a string literal in .rodata, though the linker may have merged it
 * as the tail of a longer string such as a path ending in it: so a version not preceded by a
 * digit or a dot. Other libraries linked in may carry version strings of their own.
 */
static size_t rodata_versions(const struct elf_file *elf, struct version *out, size_t max)
{
	const void *raw;
	const char *text;
	size_t len, count = 0;

	if (elf_file_section_data(elf, ".rodata", &raw, &len))
		return 0;
	text = raw;
	for (size_t i = 0; i < len && count < max; i++)
		if (version_at(text, len, i, &out[count]))
			count++;
	return count;
}

/* "libpython3.9.so.1.0", "libpython3.6m.so.1.0": the version the library was built as. */
static bool soname_version(const struct elf_file *elf, unsigned *major, unsigned *minor)
{
	char soname[256];

	return !elf_file_soname(elf, soname, sizeof(soname)) && sscanf(soname, "libpython%u.%u", major, minor) == 2;
}

/* A runtime with _PyRuntime is 3.7 or later; one with interp_head only is older. */
static bool plausible(const struct py_runtime_symbols *sym, const struct version *version)
{
	bool has_runtime_struct = version->major > 3 || (version->major == 3 && version->minor >= 7);

	return py_offsets_for_version(version->major, version->minor) && has_runtime_struct == sym->has_runtime;
}

/*
 * The version a runtime file names: the SONAME's major.minor (a renamed file keeps it), else
 * the one version string of .rodata that fits the symbols, else the first version string
 * (which may name a version without offsets: the user is told it is not supported).
 */
static void find_version(const struct elf_file *elf, struct py_runtime_file *out)
{
	struct version found[MAX_VERSION_STRINGS];
	size_t count = rodata_versions(elf, found, MAX_VERSION_STRINGS);
	unsigned major, minor;
	const struct version *chosen = count ? &found[0] : NULL;

	if (soname_version(elf, &major, &minor)) {
		out->major = major;
		out->minor = minor;
		chosen = NULL;
		for (size_t i = 0; i < count && !chosen; i++)
			if (found[i].major == major && found[i].minor == minor)
				chosen = &found[i];
		out->has_micro = chosen != NULL;
		out->micro = chosen ? chosen->micro : 0;
		return;
	}
	for (size_t i = 0; i < count; i++)
		if (plausible(&out->sym, &found[i])) {
			chosen = &found[i];
			break;
		}
	if (!chosen)
		return;
	out->major = chosen->major;
	out->minor = chosen->minor;
	out->micro = chosen->micro;
	out->has_micro = true;
}

/* The _asyncio module's offsets, where the file carries them (whatever its verdict). */
static void find_asyncio_debug(const struct elf_file *elf, struct py_runtime_file *out)
{
	const void *data;
	size_t len;

	if (elf_file_section_data(elf, PY_ASYNCIO_DEBUG_SECTION, &data, &len) ||
	    len < sizeof(out->asyncio_debug))
		return;
	memcpy(out->asyncio_debug, data, sizeof(out->asyncio_debug));
	out->has_asyncio_debug = true;
}

void py_runtime_file_examine(const struct elf_file *elf, struct py_runtime_file *out)
{
	memset(out, 0, sizeof(*out));
	/* a sparse file's tables can claim hundreds of MiB for a few KiB on disk: reading them
	 * would cost time at every new version of the file (its verdict is keyed by mtime) */
	if (!elf_file_tables_within(elf, PY_RUNTIME_FILE_MAX_TABLE_BYTES)) {
		out->unread = -EFBIG;
		return;
	}
	find_runtime_symbols(elf, &out->sym);
	find_asyncio_debug(elf, out);
	if (out->sym.has_runtime || out->sym.has_interp_head) {
		out->verdict = PY_RUNTIME_HERE;
		/* 3.11+ say their version in memory (Py_Version, _Py_DebugOffsets) */
		if (!out->sym.has_py_version)
			find_version(elf, out);
		find_eval_function(elf, out->major, &out->sym);
		return;
	}
	memset(&out->sym, 0, sizeof(out->sym));
	out->verdict = elf_file_imports_prefix(elf, api_prefixes, ARRAY_SIZE(api_prefixes)) ? PY_RUNTIME_CLIENT
											    : PY_RUNTIME_NONE;
}

void py_runtime_file_to_wire(const struct py_runtime_file *file, struct parser_py_runtime *wire)
{
	const struct py_runtime_symbols *sym = &file->sym;

	*wire = (struct parser_py_runtime){
		.verdict = (uint32_t)file->verdict, .unread = file->unread,
		.major = file->major, .minor = file->minor, .micro = file->micro, .has_micro = file->has_micro,
		.has_runtime = sym->has_runtime, .has_interp_head = sym->has_interp_head,
		.has_py_version = sym->has_py_version, .has_static_gil = sym->has_static_gil,
		.has_current_tstate = sym->has_current_tstate, .has_gc_collecting = sym->has_gc_collecting,
		.runtime = sym->runtime, .interp_head = sym->interp_head, .py_version = sym->py_version,
		.gil_last_holder = sym->gil_last_holder, .gil_locked = sym->gil_locked,
		.current_tstate = sym->current_tstate, .gc_collecting = sym->gc_collecting,
		.has_asyncio_debug = file->has_asyncio_debug,
		.has_code_counter = sym->has_code_counter, .code_counter = sym->code_counter,
		.has_eval_function = sym->has_eval_function, .eval_function = sym->eval_function,
		.eval_function_size = sym->eval_function_size,
	};
	memcpy(wire->asyncio_debug, file->asyncio_debug, sizeof(wire->asyncio_debug));
}

static bool is_flag(uint8_t value)
{
	return value <= 1;
}

int py_runtime_file_from_wire(const struct parser_py_runtime *wire, struct py_runtime_file *file)
{
	const uint8_t flags[] = { wire->has_micro, wire->has_runtime, wire->has_interp_head, wire->has_py_version,
				  wire->has_static_gil, wire->has_current_tstate, wire->has_gc_collecting,
				  wire->has_asyncio_debug, wire->has_code_counter, wire->has_eval_function };

	if (wire->verdict > PY_RUNTIME_HERE || (wire->unread && wire->unread != -ENOEXEC && wire->unread != -EFBIG) ||
	    (wire->unread && wire->verdict != PY_RUNTIME_NONE) || wire->major > 99 || wire->minor > 999 ||
	    wire->micro > 999)
		return -EBADMSG;
	for (size_t i = 0; i < ARRAY_SIZE(flags); i++)
		if (!is_flag(flags[i]))
			return -EBADMSG;
	if (wire->has_eval_function &&
	    (wire->eval_function_size == 0 || wire->eval_function_size > PY_EVAL_FUNCTION_MAX_BYTES ||
	     wire->eval_function > UINT64_MAX - wire->eval_function_size))
		return -EBADMSG;
	*file = (struct py_runtime_file){
		.verdict = (enum py_runtime_verdict)wire->verdict, .unread = wire->unread,
		.major = wire->major, .minor = wire->minor, .micro = wire->micro, .has_micro = wire->has_micro,
		.sym = {
			.has_runtime = wire->has_runtime, .has_interp_head = wire->has_interp_head,
			.has_py_version = wire->has_py_version, .has_static_gil = wire->has_static_gil,
			.has_current_tstate = wire->has_current_tstate, .has_gc_collecting = wire->has_gc_collecting,
			.runtime = wire->runtime, .interp_head = wire->interp_head, .py_version = wire->py_version,
			.gil_last_holder = wire->gil_last_holder, .gil_locked = wire->gil_locked,
			.current_tstate = wire->current_tstate, .gc_collecting = wire->gc_collecting,
			.has_code_counter = wire->has_code_counter, .code_counter = wire->code_counter,
			.has_eval_function = wire->has_eval_function, .eval_function = wire->eval_function,
			.eval_function_size = wire->eval_function_size,
		},
		.has_asyncio_debug = wire->has_asyncio_debug,
	};
	memcpy(file->asyncio_debug, wire->asyncio_debug, sizeof(file->asyncio_debug));
	return 0;
}

/* ---- the cache ---- */

/* One version of one file: a file rewritten in place, or a new file on a reused inode, differs. */
struct file_key {
	uint64_t device, inode, size;
	int64_t mtime_s, mtime_ns;
};

struct cached_verdict {
	struct file_key key;
	struct py_runtime_file file;
	bool used; /* looked up since the eviction hand last passed it: it is passed over once */
};

/* Entries grow by doubling from this many up to the capacity: a host maps a few hundred files. */
#define CACHE_FIRST_ENTRIES 64u

struct py_runtime_file_cache {
	struct parser_client *parser;   /* reads the files: root only opens them */
	struct cached_verdict *entries; /* allocated of them, count used, at most capacity */
	size_t count, allocated, capacity;
	/* full: where the eviction hand is; it replaces the first entry not used since it last
	 * passed (least recently used, nearly): a host's own files, looked up by every new process,
	 * stay while an attacker's thousands of files go through the others */
	size_t next_victim;
	struct hash_index index;        /* key hash -> position in entries */
	struct py_runtime_file_stats stats;
	/* entries and index bytes, published for the thread that holds the target budget */
	_Atomic uint64_t held_bytes;
};

int py_runtime_file_cache_new(struct py_runtime_file_cache **out, size_t capacity)
{
	struct py_runtime_file_cache *cache = calloc(1, sizeof(*cache));

	if (!cache || !capacity || capacity > UINT32_MAX)
		goto fail;
	cache->capacity = capacity;
	if (parser_client_new(&(struct parser_client_options){ .timeout_ms = PY_RUNTIME_FILE_TIMEOUT_MS },
			      &cache->parser))
		goto fail;
	hash_index_init(&cache->index);
	*out = cache;
	return 0;
fail:
	free(cache);
	return -ENOMEM;
}

int py_runtime_file_cache_set_worker(struct py_runtime_file_cache *cache, const struct parser_client_options *options)
{
	struct parser_client *parser;
	int err = parser_client_new(options, &parser);

	if (err)
		return err;
	parser_client_free(cache->parser);
	cache->parser = parser;
	return 0;
}

int py_runtime_file_cache_set_timeout(struct py_runtime_file_cache *cache, unsigned timeout_ms)
{
	return py_runtime_file_cache_set_worker(cache, &(struct parser_client_options){ .timeout_ms = timeout_ms });
}

void py_runtime_file_cache_prepare(struct py_runtime_file_cache *cache)
{
	parser_client_prepare(cache->parser);
}

void py_runtime_file_cache_free(struct py_runtime_file_cache *cache)
{
	if (!cache)
		return;
	hash_index_free(&cache->index);
	parser_client_free(cache->parser);
	free(cache->entries);
	free(cache);
}

static void key_from_stat(const struct stat *info, struct file_key *key)
{
	memset(key, 0, sizeof(*key));
	key->device = (uint64_t)info->st_dev;
	key->inode = (uint64_t)info->st_ino;
	key->size = (uint64_t)info->st_size;
	key->mtime_s = (int64_t)info->st_mtim.tv_sec;
	key->mtime_ns = (int64_t)info->st_mtim.tv_nsec;
}

static uint64_t key_hash(const struct file_key *key)
{
	uint64_t hash = hash_combine(key->device, key->inode);

	hash = hash_combine(hash, key->size);
	return hash_combine(hash, (uint64_t)key->mtime_s ^ ((uint64_t)key->mtime_ns << 32));
}

static bool holds_key(const void *context, uint32_t position, const void *wanted)
{
	const struct py_runtime_file_cache *cache = context;

	return !memcmp(&cache->entries[position].key, wanted, sizeof(struct file_key));
}

/*
 * The key a file that the worker died on (or overran its time on) is remembered under: its
 * device, inode and size without its modification time, so that touching it does not make us
 * read it again; rewriting it to another size does, once per size.
 */
static struct file_key bad_key(const struct file_key *key)
{
	struct file_key bad = *key;

	bad.mtime_s = INT64_MIN;
	bad.mtime_ns = 0;
	return bad;
}

static int64_t find_key(const struct py_runtime_file_cache *cache, const struct file_key *key)
{
	return hash_index_find(&cache->index, key_hash(key), holds_key, cache, key);
}

/* The file behind the mapping as it is now, through map_files (no file is opened). */
static int stat_mapping(pid_t pid, const struct proc_map *map, struct file_key *key)
{
	char path[96];
	struct stat info;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, map->start, map->end);
	if (stat(path, &info) || !S_ISREG(info.st_mode))
		return -ENOENT;
	key_from_stat(&info, key);
	return 0;
}

/* Room for one more entry below the capacity; false when out of memory. */
static bool grow_entries(struct py_runtime_file_cache *cache)
{
	size_t allocated = cache->allocated ? cache->allocated * 2 : CACHE_FIRST_ENTRIES;
	struct cached_verdict *entries;

	if (allocated > cache->capacity)
		allocated = cache->capacity;
	entries = realloc(cache->entries, allocated * sizeof(*entries));
	if (!entries)
		return false;
	cache->entries = entries;
	cache->allocated = allocated;
	return true;
}

/* What the cache's tables take now, for py_runtime_file_cache_held_bytes (another thread). */
static void publish_held(struct py_runtime_file_cache *cache)
{
	atomic_store_explicit(&cache->held_bytes,
			      cache->allocated * sizeof(*cache->entries) + cache->index.capacity * sizeof(struct hash_slot),
			      memory_order_relaxed);
}

uint64_t py_runtime_file_cache_held_bytes(const struct py_runtime_file_cache *cache)
{
	return cache ? atomic_load_explicit(&cache->held_bytes, memory_order_relaxed) : 0;
}

static void remember(struct py_runtime_file_cache *cache, const struct file_key *key,
		     const struct py_runtime_file *file)
{
	size_t position;

	if (cache->count == cache->allocated && cache->count < cache->capacity && !grow_entries(cache))
		return; /* not remembered: examined again next time */
	publish_held(cache);
	if (cache->count < cache->capacity) {
		position = cache->count;
	} else {
		/* at most one turn: the hand clears what it passes over */
		while (cache->entries[cache->next_victim].used) {
			cache->entries[cache->next_victim].used = false;
			cache->next_victim = (cache->next_victim + 1) % cache->capacity;
		}
		position = cache->next_victim;
		cache->next_victim = (cache->next_victim + 1) % cache->capacity;
		hash_index_remove(&cache->index, key_hash(&cache->entries[position].key), (uint32_t)position);
		cache->stats.evicted++;
	}
	if (hash_index_insert(&cache->index, key_hash(key), (uint32_t)position))
		return; /* not remembered: examined again next time */
	cache->entries[position].key = *key;
	cache->entries[position].file = *file;
	cache->entries[position].used = false;
	if (position == cache->count)
		cache->count++;
	publish_held(cache);
}

/* What the worker says of fd's file; -ECHILD: the file is bad (the worker died on it, overran
 * its time or answered nonsense), -ENOSYS: no worker. */
static int ask_worker(struct parser_client *parser, int fd, struct py_runtime_file *out)
{
	void *payload = NULL;
	size_t len = 0;
	int err = parser_client_request(parser, PARSER_REQUEST_PY_RUNTIME, fd, 0, sizeof(struct parser_py_runtime),
					&payload, &len);

	if (!err && (len != sizeof(struct parser_py_runtime) || py_runtime_file_from_wire(payload, out))) {
		parser_client_distrust(parser);
		err = -ECHILD;
	}
	free(payload);
	/* a file that took all of the worker's memory is as bad as one it died on */
	return err == -ENOMEM ? -ECHILD : err;
}

/*
 * Opens the file (root checks it is the regular file the mapping names) and has the parser
 * worker read it: its verdict, and its identity as opened (when key is given). A file the
 * worker could not survive is answered as unread (-ECHILD).
 */
static int examine_mapping(struct parser_client *parser, pid_t pid, const struct proc_map *map,
			   struct py_runtime_file *out, struct file_key *key, bool *keyed)
{
	struct stat info;
	int fd = elf_file_map_fd(pid, map);
	int err;

	memset(out, 0, sizeof(*out));
	if (fd == -ENOEXEC || fd == -EFBIG) {
		out->unread = fd;
		return 0;
	}
	if (fd < 0)
		return fd;
	if (key && !fstat(fd, &info)) {
		key_from_stat(&info, key);
		*keyed = true;
	}
	err = ask_worker(parser, fd, out);
	close(fd);
	if (err == -ECHILD) {
		memset(out, 0, sizeof(*out));
		out->unread = -ECHILD;
		return 0;
	}
	return err;
}

/* A verdict examined: counted and remembered (a bad file under its bad key). */
static void note_examined(struct py_runtime_file_cache *cache, struct file_key *key, bool keyed,
			  const struct py_runtime_file *file)
{
	cache->stats.examined++;
	cache->stats.runtimes += file->verdict == PY_RUNTIME_HERE;
	if (file->unread == -ECHILD) {
		cache->stats.bad++;
		if (keyed)
			*key = bad_key(key);
	}
	if (keyed)
		remember(cache, key, file);
}

/* A file of a batch: its descriptor (root's, checked) and its key as opened. */
struct batch_file {
	int fd;
	struct file_key key;
};

/*
 * What one worker answer says of a file: true with *file set, the worker's failure on it
 * (died, overran, out of memory, nonsense) being a bad file; false for any other error (the
 * file is left to py_runtime_file_lookup, which reports it).
 */
static bool take_answer(struct parser_client *parser, struct parser_file_answer *answer, struct py_runtime_file *file)
{
	int err = answer->status;

	if (!err && (answer->len != sizeof(struct parser_py_runtime) ||
		     py_runtime_file_from_wire(answer->payload, file))) {
		parser_client_distrust(parser);
		err = -ECHILD;
	}
	free(answer->payload);
	answer->payload = NULL;
	if (err == -ECHILD || err == -ENOMEM) {
		memset(file, 0, sizeof(*file));
		file->unread = -ECHILD;
		return true;
	}
	return !err;
}

/* Has the worker judge files (count, at most PARSER_MAX_BATCH_FILES) in as few round trips as
 * it survives: those after a file it dies on are asked again. Closes them; the files read. */
static size_t judge_batch(struct py_runtime_file_cache *cache, struct batch_file *files, size_t count)
{
	struct parser_file_answer answers[PARSER_MAX_BATCH_FILES];
	int fds[PARSER_MAX_BATCH_FILES];
	size_t start = 0, read = 0;

	while (start < count) {
		size_t answered = 0, i;

		for (i = start; i < count; i++)
			fds[i - start] = files[i].fd;
		if (parser_client_request_each(cache->parser, PARSER_REQUEST_PY_RUNTIMES, fds, count - start,
					       sizeof(struct parser_py_runtime), answers, &answered) ||
		    !answered)
			break; /* no worker: each lookup says so */
		for (i = 0; i < answered; i++) {
			struct py_runtime_file file;
			bool lied = false;

			if (!take_answer(cache->parser, &answers[i], &file))
				continue;
			lied = answers[i].status == 0 && file.unread == -ECHILD;
			note_examined(cache, &files[start + i].key, true, &file);
			read++;
			if (lied) {
				/* the rest of a lying worker's answers are not taken: asked again */
				for (size_t j = i + 1; j < answered; j++)
					free(answers[j].payload);
				answered = i + 1;
			}
		}
		start += answered;
	}
	for (size_t i = 0; i < count; i++)
		close(files[i].fd);
	return read;
}

static bool in_batch(const struct batch_file *files, size_t count, const struct file_key *key)
{
	for (size_t i = 0; i < count; i++)
		if (!memcmp(&files[i].key, key, sizeof(*key)))
			return true;
	return false;
}

/* The file behind map opened for a batch, unless its verdict is known or already asked for. */
static bool add_to_batch(struct py_runtime_file_cache *cache, pid_t pid, const struct proc_map *map,
			 struct batch_file *files, size_t *count)
{
	struct file_key key, bad;
	struct stat info;
	int fd;

	if (stat_mapping(pid, map, &key))
		return false;
	bad = bad_key(&key);
	if (find_key(cache, &key) >= 0 || find_key(cache, &bad) >= 0 || in_batch(files, *count, &key))
		return false;
	fd = elf_file_map_fd(pid, map);
	if (fd < 0)
		return false; /* what it is (unread, gone) is the lookup's to say */
	if (fstat(fd, &info) || (key_from_stat(&info, &key), in_batch(files, *count, &key))) {
		close(fd);
		return false;
	}
	files[*count] = (struct batch_file){ .fd = fd, .key = key };
	++*count;
	return true;
}

size_t py_runtime_file_prefetch(struct py_runtime_file_cache *cache, pid_t pid, const struct proc_map *const *maps,
				size_t count, size_t max_reads)
{
	struct batch_file files[PARSER_MAX_BATCH_FILES];
	size_t pending = 0, read = 0;

	if (!cache)
		return 0;
	for (size_t i = 0; i < count && read + pending < max_reads; i++) {
		if (!add_to_batch(cache, pid, maps[i], files, &pending) || pending < PARSER_MAX_BATCH_FILES)
			continue;
		read += judge_batch(cache, files, pending);
		pending = 0;
	}
	if (pending)
		read += judge_batch(cache, files, pending);
	return read;
}

/* Without a cache (one-shot discovery): a worker for this file alone. */
static int examine_uncached(pid_t pid, const struct proc_map *map, struct py_runtime_file *out)
{
	struct parser_client *parser;
	int err = parser_client_new(&(struct parser_client_options){ .timeout_ms = PY_RUNTIME_FILE_TIMEOUT_MS },
				    &parser);

	if (err)
		return err;
	err = examine_mapping(parser, pid, map, out, NULL, NULL);
	parser_client_free(parser);
	return err;
}

int py_runtime_file_lookup(struct py_runtime_file_cache *cache, pid_t pid, const struct proc_map *map,
			   struct py_runtime_file *out)
{
	struct file_key key, bad;
	bool keyed = false;
	int64_t found;
	int err;

	if (!cache)
		return examine_uncached(pid, map, out);
	cache->stats.lookups++;
	if (!stat_mapping(pid, map, &key)) {
		keyed = true;
		found = find_key(cache, &key);
		if (found < 0) {
			bad = bad_key(&key);
			found = find_key(cache, &bad);
		}
		if (found >= 0) {
			cache->entries[found].used = true;
			*out = cache->entries[found].file;
			return 0;
		}
	}
	err = examine_mapping(cache->parser, pid, map, out, &key, &keyed);
	if (err)
		return err;
	note_examined(cache, &key, keyed, out);
	return 0;
}

void py_runtime_file_cache_count_skipped(struct py_runtime_file_cache *cache, size_t count)
{
	if (cache)
		cache->stats.skipped += count;
}

void py_runtime_file_cache_stats(const struct py_runtime_file_cache *cache, struct py_runtime_file_stats *stats)
{
	struct parser_client_stats parser;

	memset(stats, 0, sizeof(*stats));
	if (!cache)
		return;
	*stats = cache->stats;
	parser_client_stats(cache->parser, &parser);
	stats->requests = parser.requests;
	stats->files = cache->count;
	stats->capacity = cache->capacity;
}
