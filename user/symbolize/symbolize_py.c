/* SPDX-License-Identifier: MIT */
#include "symbolize/symbolize_py.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "profile/py_opcodes.h"
#include "symbolize/py_linetable.h"
#include "proc/target_mem.h"
#include "util/array.h"
#include "util/bulk_alloc.h"
#include "util/hash.h"
#include "util/intern.h"
#include "util/target_budget.h"

/* A code object as read once from one process; status -ESTALE remembers a reused address. */
struct code_entry {
	uint64_t code_addr;
	pid_t pid;
	uint32_t checksum;
	int status;
	unsigned major, minor;
	int32_t firstlineno;
	const char *file; /* in cache->strings */
	const char *name;
	uint8_t *linetable;
	size_t linetable_len;
	bool linetable_missing; /* too large to read, or dropped over budget: lines unknown (never re-read) */
	bool noted;             /* named from BPF's note: the object was gone, its bytes are not to be read */
	bool evicted;           /* chosen by an eviction in progress */
	uint64_t last_used;     /* *cache->clock at its last use: the least recent is evicted first */
};

/* One decoded (code object, raw offset): what a hit returns without further work. */
struct frame_slot {
	uint64_t code_addr;
	pid_t pid;
	uint32_t checksum;
	uint32_t instr_offset;
	bool used;
	int16_t opcode; /* the instruction byte when read (symbolize_py_cache_set_opcodes), else -1 */
	struct code_entry *code;
	struct py_location location;
	uint64_t opcode_addr; /* where that byte is in the target, for symbolize_py_refresh_opcodes; 0: none */
};

/* Decoded frames kept before the table starts over (code objects are kept). */
#define SYMBOLIZE_PY_MAX_FRAME_SLOTS (1u << 20)
#define SYMBOLIZE_PY_INITIAL_CAPACITY 512u
/* A frame's instruction is looked for only this far into its code object's bytecode (bytes). */
#define SYMBOLIZE_PY_MAX_OPCODE_SCAN (64u << 10)
/* Frame slots symbolize_py_refresh_opcodes looks at in one call, at most. */
#define SYMBOLIZE_PY_REFRESH_SLOTS (64u << 10)
/* The code object's fields lie within this many bytes of its start in every layout. */
#define SYMBOLIZE_PY_MAX_CODE_READ 1024u

struct symbolize_py_cache {
	struct code_entry **codes;    /* by position; the entries never move (frames point at them) */
	size_t code_count;
	size_t code_capacity;
	struct hash_index code_index; /* code_hash -> position in codes */
	struct frame_slot *frames;    /* open addressing */
	size_t frames_capacity;
	size_t frames_count;
	struct intern_table strings; /* NUL-terminated file and function names */
	uint64_t own_clock;
	uint64_t *clock;             /* counts uses, for least-recently-used eviction: own_clock, or
				      * the target budget's (its eviction compares every store's) */
	struct target_budget *budget; /* NULL: none; else the line tables are charged to it */
	bool opcodes;                /* read each new (code object, offset)'s instruction byte */
	size_t refresh_cursor;       /* the frame slot symbolize_py_refresh_opcodes goes on from */
	int budget_store;
	int entries_store;           /* the budget's store of code objects' entries (least recent evicted) */
	int names_store;             /* and of their interned names (charged; refused: the placeholder) */
	int frames_store;            /* and of the decoded frame table (refused: it starts over) */
	uint64_t generation;         /* counts drops of code objects (symbolize_py_generation) */
	size_t names_compacted_bytes; /* what the names' table held after its last compaction */
	size_t bytes;                /* every code object's bytes (code_entry_bytes) */
	symbolize_py_note_fn note_of;   /* NULL: code objects are named only from the live object */
	void *note_context;
	struct symbolize_py_stats stats;
};

/*
 * Code objects are looked up only when a frame misses, so they use the shared struct
 * hash_index. A frame hit is the per-sample path: that table probes inline on its own slots,
 * since the index's out-of-line lookup with a match callback and a second indirection
 * measured twice as slow per hit; and its hash is two bare mixes, which hash_combine's
 * extra arithmetic made some 15 instructions dearer per frame.
 */
static uint64_t code_hash(pid_t pid, uint64_t code_addr, uint32_t checksum)
{
	return hash_combine(code_addr, (uint64_t)(uint32_t)pid << 32 | checksum);
}

static inline uint64_t frame_hash(pid_t pid, uint64_t code_addr, uint32_t checksum, uint32_t instr_offset)
{
	uint64_t code = hash_mix64(code_addr * 0x9e3779b97f4a7c15ull ^ ((uint64_t)(uint32_t)pid << 32 | checksum));

	return hash_mix64(code ^ instr_offset);
}

struct symbolize_py_cache *symbolize_py_cache_new(void)
{
	struct symbolize_py_cache *cache = calloc(1, sizeof(*cache));

	if (!cache)
		return NULL;
	cache->frames = calloc(SYMBOLIZE_PY_INITIAL_CAPACITY, sizeof(*cache->frames));
	if (!cache->frames) {
		free(cache);
		return NULL;
	}
	cache->frames_capacity = SYMBOLIZE_PY_INITIAL_CAPACITY;
	cache->clock = &cache->own_clock;
	hash_index_init(&cache->code_index);
	intern_init(&cache->strings);
	return cache;
}

static void code_entry_free(struct code_entry *entry)
{
	if (entry) {
		bulk_free(entry->linetable);
		free(entry);
	}
}

void symbolize_py_cache_free(struct symbolize_py_cache *cache)
{
	if (!cache)
		return;
	for (size_t i = 0; i < cache->code_count; i++)
		code_entry_free(cache->codes[i]);
	free(cache->codes);
	hash_index_free(&cache->code_index);
	free(cache->frames);
	intern_free(&cache->strings);
	free(cache);
}

void symbolize_py_cache_stats(const struct symbolize_py_cache *cache, struct symbolize_py_stats *stats)
{
	*stats = cache->stats;
	stats->codes = cache->code_count;
	stats->code_bytes = cache->bytes;
	stats->name_bytes = cache->strings.bytes;
	stats->name_table_bytes = intern_held_bytes(&cache->strings);
	stats->frames = cache->frames_count;
}

/* --- what the targets hold together --- */

static size_t code_entry_bytes(const struct code_entry *entry)
{
	return sizeof(*entry) + sizeof(struct code_entry *) + entry->linetable_len;
}

/* A line table's bytes leave the target budget. */
static void release_linetable(struct symbolize_py_cache *cache, const struct code_entry *entry)
{
	if (cache->budget && entry->linetable_len)
		target_budget_release(cache->budget, cache->budget_store, entry->linetable_len);
}

/* What an entry holds apart from its line table (code_entry_bytes without it). */
#define CODE_ENTRY_OWN_BYTES (sizeof(struct code_entry) + sizeof(struct code_entry *))

static void uncount_code(struct symbolize_py_cache *cache, const struct code_entry *entry)
{
	release_linetable(cache, entry);
	if (cache->budget)
		target_budget_release(cache->budget, cache->entries_store, CODE_ENTRY_OWN_BYTES);
	cache->bytes -= code_entry_bytes(entry);
}

/* The line table goes and its code object is remembered as over budget: lines unknown,
 * never read again. The caller settles the table's bytes with the cache and the budget. */
static void forget_linetable(struct symbolize_py_cache *cache, struct code_entry *entry)
{
	bulk_free(entry->linetable);
	entry->linetable = NULL;
	entry->linetable_len = 0;
	entry->linetable_missing = true;
	cache->stats.lines_over_budget++;
}

/* Whether the target budget takes a line table of len bytes, before it is read; refused (the
 * budget is full of objects used more recently, or the table is larger than it), the code
 * object is remembered as over budget: lines unknown, never read at all. */
static bool charge_linetable(struct symbolize_py_cache *cache, struct code_entry *entry, size_t len)
{
	if (!cache->budget || !len || target_budget_charge(cache->budget, cache->budget_store, len) == 0)
		return true;
	forget_linetable(cache, entry);
	return false;
}

/* --- the code object table --- */

struct code_key {
	uint64_t code_addr;
	pid_t pid;
	uint32_t checksum;
};

static bool code_matches(const void *context, uint32_t position, const void *wanted)
{
	const struct code_entry *entry = ((const struct symbolize_py_cache *)context)->codes[position];
	const struct code_key *key = wanted;

	return entry->code_addr == key->code_addr && entry->pid == key->pid && entry->checksum == key->checksum;
}

static struct code_entry *find_code(const struct symbolize_py_cache *cache, pid_t pid, uint64_t code_addr,
				    uint32_t checksum)
{
	struct code_key key = { code_addr, pid, checksum };
	int64_t position = hash_index_find(&cache->code_index, code_hash(pid, code_addr, checksum), code_matches,
					   cache, &key);

	return position < 0 ? NULL : cache->codes[position];
}

static int add_code(struct symbolize_py_cache *cache, struct code_entry *entry)
{
	int err = ARRAY_RESERVE(cache->codes, cache->code_capacity, cache->code_count + 1);

	if (!err)
		err = hash_index_insert(&cache->code_index,
					code_hash(entry->pid, entry->code_addr, entry->checksum),
					(uint32_t)cache->code_count);
	if (err)
		return err;
	cache->bytes += code_entry_bytes(entry);
	cache->codes[cache->code_count++] = entry;
	return 0;
}

/* Frees pid's code objects (every evicted one when pid is 0) and keeps the others in order.
 * The index is rebuilt at its size, which held them all: no allocation, nothing can fail
 * half-way. */
static void drop_codes_of(struct symbolize_py_cache *cache, pid_t pid)
{
	size_t kept = 0;

	cache->generation++;
	hash_index_clear(&cache->code_index);
	for (size_t i = 0; i < cache->code_count; i++) {
		struct code_entry *entry = cache->codes[i];

		if (pid ? entry->pid == pid : entry->evicted) {
			uncount_code(cache, entry);
			code_entry_free(entry);
			continue;
		}
		cache->codes[kept] = entry;
		hash_index_insert(&cache->code_index, code_hash(entry->pid, entry->code_addr, entry->checksum),
				  (uint32_t)kept);
		kept++;
	}
	cache->code_count = kept;
}

/* --- the decoded frame table --- */

static struct frame_slot *find_frame(const struct symbolize_py_cache *cache, pid_t pid, uint64_t code_addr,
				     uint32_t checksum, uint32_t instr_offset)
{
	size_t mask = cache->frames_capacity - 1;

	for (size_t i = frame_hash(pid, code_addr, checksum, instr_offset) & mask, probes = 0; probes <= mask;
	     i = (i + 1) & mask, probes++) {
		struct frame_slot *slot = &cache->frames[i];

		if (!slot->used)
			return NULL;
		if (slot->code_addr == code_addr && slot->instr_offset == instr_offset && slot->pid == pid &&
		    slot->checksum == checksum)
			return slot;
	}
	return NULL;
}

static void place_frame(struct frame_slot *frames, size_t capacity, const struct frame_slot *slot)
{
	size_t mask = capacity - 1;
	size_t i = frame_hash(slot->pid, slot->code_addr, slot->checksum, slot->instr_offset) & mask;

	while (frames[i].used)
		i = (i + 1) & mask;
	frames[i] = *slot;
}

static int rebuild_frames(struct symbolize_py_cache *cache, size_t capacity, pid_t drop_pid)
{
	struct frame_slot *frames = calloc(capacity, sizeof(*frames));
	size_t count = 0;

	if (!frames)
		return -ENOMEM;
	for (size_t i = 0; i < cache->frames_capacity; i++) {
		const struct frame_slot *slot = &cache->frames[i];

		if (!slot->used || (drop_pid && slot->pid == drop_pid) || slot->code->evicted)
			continue;
		place_frame(frames, capacity, slot);
		count++;
	}
	free(cache->frames);
	cache->frames = frames;
	cache->frames_capacity = capacity;
	cache->frames_count = count;
	return 0;
}

/* Whether the target budget takes the frame table's growth to twice its size; refused, the
 * table starts over at its size (decoded locations are cheap to recompute from the code
 * objects kept), which the budget counts as an eviction of the store. */
static bool frames_may_grow(struct symbolize_py_cache *cache)
{
	uint64_t more = cache->frames_capacity * sizeof(*cache->frames);

	if (!cache->budget || target_budget_charge(cache->budget, cache->frames_store, more) == 0)
		return true;
	memset(cache->frames, 0, cache->frames_capacity * sizeof(*cache->frames));
	target_budget_note_eviction(cache->budget, cache->frames_store, cache->frames_count * sizeof(*cache->frames));
	cache->frames_count = 0;
	return false;
}

static int add_frame(struct symbolize_py_cache *cache, const struct frame_slot *slot)
{
	if (cache->frames_count >= SYMBOLIZE_PY_MAX_FRAME_SLOTS) {
		/* Bounded memory: decoded locations are cheap to recompute from the kept code objects. */
		memset(cache->frames, 0, cache->frames_capacity * sizeof(*cache->frames));
		cache->frames_count = 0;
	}
	if ((cache->frames_count + 1) * 2 > cache->frames_capacity && frames_may_grow(cache)) {
		int err = rebuild_frames(cache, cache->frames_capacity * 2, 0);

		if (err < 0) {
			if (cache->budget)
				target_budget_release(cache->budget, cache->frames_store,
						      cache->frames_capacity * sizeof(*cache->frames));
			return err;
		}
	}
	place_frame(cache->frames, cache->frames_capacity, slot);
	cache->frames_count++;
	return 0;
}

/* The slots that stay once pid's go (none of an evicted code object's stay either). */
static size_t frames_kept_without(const struct symbolize_py_cache *cache, pid_t pid)
{
	size_t kept = 0;

	for (size_t i = 0; i < cache->frames_capacity; i++) {
		const struct frame_slot *slot = &cache->frames[i];

		kept += slot->used && slot->pid != pid && !slot->code->evicted;
	}
	return kept;
}

/*
 * The table's size for kept slots: as it is, unless they fill an eighth of it or less; then
 * the smallest that they fill a quarter of at most (room to grow before the next doubling).
 * A whole host's exited processes take their frames with them, and a table that kept the size
 * of the busiest moment (an attacker's thousands of frames) stayed resident for the run.
 */
static size_t frames_capacity_for(const struct symbolize_py_cache *cache, size_t kept)
{
	size_t capacity = cache->frames_capacity;

	if (kept * 8 > capacity)
		return capacity;
	while (capacity / 2 >= SYMBOLIZE_PY_INITIAL_CAPACITY && kept * 4 <= capacity / 2)
		capacity /= 2;
	return capacity;
}

void symbolize_py_forget_pid(struct symbolize_py_cache *cache, pid_t pid)
{
	size_t before = cache->frames_capacity;
	size_t capacity = frames_capacity_for(cache, frames_kept_without(cache, pid));

	/* Frame slots point at code entries: drop them first. On ENOMEM keep the old frame table and
	 * clear it instead, so nothing dangles. */
	if (rebuild_frames(cache, capacity, pid) < 0) {
		memset(cache->frames, 0, cache->frames_capacity * sizeof(*cache->frames));
		cache->frames_count = 0;
	} else if (cache->budget && capacity < before) {
		target_budget_release(cache->budget, cache->frames_store, (before - capacity) * sizeof(*cache->frames));
	}
	drop_codes_of(cache, pid);
}

uint64_t symbolize_py_generation(const struct symbolize_py_cache *cache)
{
	return cache->generation;
}

/* --- one budget for every target together --- */

static int compare_last_used(const void *left, const void *right)
{
	const struct code_entry *a = *(struct code_entry *const *)left, *b = *(struct code_entry *const *)right;

	return a->last_used < b->last_used ? -1 : a->last_used > b->last_used;
}

/* Every code object (those holding a line table only, if with_linetable), least recent first;
 * NULL on ENOMEM. */
static struct code_entry **codes_by_last_use(const struct symbolize_py_cache *cache, bool with_linetable,
					     size_t *count)
{
	struct code_entry **sorted = malloc((cache->code_count + 1) * sizeof(*sorted));

	*count = 0;
	if (!sorted)
		return NULL;
	for (size_t i = 0; i < cache->code_count; i++)
		if (!with_linetable || cache->codes[i]->linetable)
			sorted[(*count)++] = cache->codes[i];
	qsort(sorted, *count, sizeof(*sorted), compare_last_used);
	return sorted;
}

/*
 * Past the byte budget, the least recently used line tables go until three quarters of it
 * are held (whichever process they belong to). Their code objects stay, remembered as over
 * budget: names still answered, frames already decoded keep their lines, new offsets read
 * line unknown, and nothing is read from the target again. keep (the one being answered)
 * keeps its table.
 */
static int drop_line_tables(struct symbolize_py_cache *cache, const struct code_entry *keep)
{
	struct code_entry **sorted;
	size_t count;

	if (cache->bytes <= SYMBOLIZE_PY_MAX_BYTES)
		return 0;
	sorted = codes_by_last_use(cache, true, &count);
	if (!sorted)
		return -ENOMEM;
	for (size_t i = 0; i < count && cache->bytes > SYMBOLIZE_PY_MAX_BYTES / 4 * 3; i++) {
		struct code_entry *entry = sorted[i];

		if (entry == keep)
			continue;
		release_linetable(cache, entry);
		cache->bytes -= entry->linetable_len;
		forget_linetable(cache, entry);
	}
	free(sorted);
	return 0;
}

/* The target budget's view of the line tables (util/target_budget.h): the last use of the
 * least recent code object holding one. */
static uint64_t oldest_linetable(void *context)
{
	const struct symbolize_py_cache *cache = context;
	uint64_t oldest = UINT64_MAX;

	for (size_t i = 0; i < cache->code_count; i++)
		if (cache->codes[i]->linetable && cache->codes[i]->last_used < oldest)
			oldest = cache->codes[i]->last_used;
	return oldest;
}

/* The least recently used line tables go, as drop_line_tables drops them (their code objects
 * remembered as over budget), until bytes are freed or the next is used since older_than. */
static uint64_t evict_linetables(void *context, uint64_t bytes, uint64_t older_than)
{
	struct symbolize_py_cache *cache = context;
	struct code_entry **sorted;
	uint64_t freed = 0;
	size_t count;

	sorted = codes_by_last_use(cache, true, &count);
	if (!sorted)
		return 0;
	for (size_t i = 0; i < count && freed < bytes && (!freed || sorted[i]->last_used < older_than); i++) {
		struct code_entry *entry = sorted[i];

		freed += entry->linetable_len;
		cache->bytes -= entry->linetable_len;
		forget_linetable(cache, entry);
	}
	free(sorted);
	return freed;
}

void symbolize_py_cache_set_notes(struct symbolize_py_cache *cache, symbolize_py_note_fn note_of, void *context)
{
	cache->note_of = note_of;
	cache->note_context = context;
}

void symbolize_py_cache_set_opcodes(struct symbolize_py_cache *cache, bool opcodes)
{
	cache->opcodes = opcodes;
}

size_t symbolize_py_refresh_opcodes(struct symbolize_py_cache *cache, size_t max_reads)
{
	size_t reads = 0, changed = 0;

	if (!cache->opcodes || !cache->frames_capacity)
		return 0;
	for (size_t scanned = 0; reads < max_reads && scanned < cache->frames_capacity &&
				 scanned < SYMBOLIZE_PY_REFRESH_SLOTS; scanned++) {
		struct frame_slot *slot = &cache->frames[cache->refresh_cursor++ % cache->frames_capacity];
		uint8_t opcode;

		if (!slot->used || !slot->opcode_addr)
			continue;
		reads++;
		/* a process gone, or a byte that names nothing: the name stays */
		if (target_mem_read(slot->pid, slot->opcode_addr, &opcode, sizeof(opcode)) < 0 || opcode == 255 ||
		    opcode == slot->opcode)
			continue;
		slot->opcode = opcode;
		changed++;
	}
	cache->refresh_cursor %= cache->frames_capacity;
	/* the stacks kept resolved above this cache name the old instructions */
	if (changed)
		cache->generation++;
	return changed;
}

static void true_up_names(struct symbolize_py_cache *cache);

int symbolize_py_cache_set_budget(struct symbolize_py_cache *cache, struct target_budget *budget)
{
	int store = target_budget_register(budget, "line tables", oldest_linetable, evict_linetables, cache);
	int entries = store < 0 ? store : target_budget_register(budget, "code objects", NULL, NULL, NULL);
	int names = entries < 0 ? entries : target_budget_register(budget, "code names", NULL, NULL, NULL);
	int frames = names < 0 ? names : target_budget_register(budget, "decoded frames", NULL, NULL, NULL);

	if (frames < 0)
		return frames;
	cache->budget = budget;
	cache->budget_store = store;
	cache->entries_store = entries;
	cache->names_store = names;
	cache->frames_store = frames;
	cache->clock = target_budget_clock(budget);
	/* the tables it starts with */
	target_budget_set_held(budget, frames, cache->frames_capacity * sizeof(*cache->frames));
	true_up_names(cache);
	return 0;
}

/* The code objects marked evicted go, frame slots first (they point at them), or the whole
 * frame table is cleared if it cannot be rebuilt. */
static void drop_evicted_codes(struct symbolize_py_cache *cache)
{
	if (rebuild_frames(cache, cache->frames_capacity, 0) < 0) {
		memset(cache->frames, 0, cache->frames_capacity * sizeof(*cache->frames));
		cache->frames_count = 0;
	}
	drop_codes_of(cache, 0);
}

static int evict_oldest_codes(struct symbolize_py_cache *cache, size_t keep);

/*
 * Past the count budget, the least recently used code objects go until three quarters of it
 * are held (the batch keeps evictions, each a pass over the tables, rare). Frame slots point
 * at code objects: they are dropped first, or the whole table is cleared if it cannot be
 * rebuilt.
 */
static int evict_least_used(struct symbolize_py_cache *cache)
{
	if (cache->code_count <= SYMBOLIZE_PY_MAX_CODES)
		return 0;
	return evict_oldest_codes(cache, SYMBOLIZE_PY_MAX_CODES / 4 * 3);
}

/* The least recently used code objects go until keep are left (the newest always stays). */
static int evict_oldest_codes(struct symbolize_py_cache *cache, size_t keep)
{
	struct code_entry **sorted;
	size_t count, codes;

	sorted = codes_by_last_use(cache, false, &count);
	if (!sorted)
		return -ENOMEM;
	codes = count;
	/* The newest (last in order) always stays: it is the one being answered. */
	for (size_t i = 0; i + 1 < count && codes > keep; i++) {
		sorted[i]->evicted = true;
		codes--;
		cache->stats.evicted++;
	}
	free(sorted);
	drop_evicted_codes(cache);
	return 0;
}

/*
 * A new code object's entry into the target budget. Entries are evicted by this cache alone,
 * never for another store's sake: the budget would trade thousands of them (each the memory
 * that a code object is over budget, or its name) for one line table's worth of bytes. Refused,
 * the least recently used quarter of the code objects goes (read again if seen again) and the
 * charge is tried once more; refused again (the budget is full of what cannot be evicted), the
 * new one is not kept, and read again if seen again.
 */
/* The decoded frame table back at its first size, its growth given back to the budget: what it
 * held is cheap to recompute from the code objects kept. false: it is at that size already. */
static bool shrink_frames(struct symbolize_py_cache *cache)
{
	size_t grown = cache->frames_capacity - SYMBOLIZE_PY_INITIAL_CAPACITY;

	if (cache->frames_capacity <= SYMBOLIZE_PY_INITIAL_CAPACITY)
		return false;
	memset(cache->frames, 0, cache->frames_capacity * sizeof(*cache->frames));
	target_budget_note_eviction(cache->budget, cache->frames_store, cache->frames_count * sizeof(*cache->frames));
	cache->frames_count = 0;
	if (rebuild_frames(cache, SYMBOLIZE_PY_INITIAL_CAPACITY, 0) < 0)
		return false; /* kept at its size, empty */
	target_budget_release(cache->budget, cache->frames_store, grown * sizeof(*cache->frames));
	return true;
}

static bool charge_entry(struct symbolize_py_cache *cache)
{
	size_t before = cache->code_count;

	if (!cache->budget || target_budget_charge(cache->budget, cache->entries_store, CODE_ENTRY_OWN_BYTES) == 0)
		return true;
	if (evict_oldest_codes(cache, cache->code_count / 4 * 3) < 0)
		return false;
	target_budget_note_eviction(cache->budget, cache->entries_store,
				    (before - cache->code_count) * CODE_ENTRY_OWN_BYTES);
	if (target_budget_charge(cache->budget, cache->entries_store, CODE_ENTRY_OWN_BYTES) == 0)
		return true;
	/* Still no room: the decoded frames give theirs before a code object goes unnamed. */
	return shrink_frames(cache) &&
	       target_budget_charge(cache->budget, cache->entries_store, CODE_ENTRY_OWN_BYTES) == 0;
}

/* --- reading the target --- */

static const char *intern_string(struct symbolize_py_cache *cache, const char *text, size_t len)
{
	int64_t id;
	size_t stored_len;

	/* The NUL is part of the key so that the stored copy is a C string. */
	id = intern_add(&cache->strings, text, len + 1, NULL);
	if (id < 0)
		return NULL;
	return intern_key(&cache->strings, (uint32_t)id, &stored_len);
}

static size_t utf8_encode(uint32_t code_point, char *out)
{
	if (code_point >= 0xd800 && code_point <= 0xdfff)
		code_point = 0xfffd; /* a lone surrogate has no UTF-8 form */
	if (code_point < 0x80) {
		out[0] = (char)code_point;
		return 1;
	}
	if (code_point < 0x800) {
		out[0] = (char)(0xc0 | code_point >> 6);
		out[1] = (char)(0x80 | (code_point & 0x3f));
		return 2;
	}
	if (code_point < 0x10000) {
		out[0] = (char)(0xe0 | code_point >> 12);
		out[1] = (char)(0x80 | ((code_point >> 6) & 0x3f));
		out[2] = (char)(0x80 | (code_point & 0x3f));
		return 3;
	}
	if (code_point > 0x10ffff)
		return utf8_encode(0xfffd, out);
	out[0] = (char)(0xf0 | code_point >> 18);
	out[1] = (char)(0x80 | ((code_point >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((code_point >> 6) & 0x3f));
	out[3] = (char)(0x80 | (code_point & 0x3f));
	return 4;
}

/* PEP 393 state bits. */
#define UNICODE_KIND(state) (((state) >> 2) & 7u)
#define UNICODE_COMPACT(state) (((state) >> 5) & 1u)
#define UNICODE_ASCII(state) (((state) >> 6) & 1u)

static int read_header_field(pid_t pid, uint64_t addr, uint32_t offset, void *value, size_t len)
{
	if (offset == PY_OFF_NONE)
		return -EINVAL;
	return target_mem_read(pid, addr + offset, value, len);
}

/* A 3.x str as UTF-8 into a malloc'd buffer (*text, *len), at most max_chars of it. */
static int read_unicode_within(pid_t pid, const struct py_offsets *off, uint64_t addr, size_t max_chars, char **text,
			       size_t *len)
{
	uint32_t state, kind;
	int64_t length;
	uint64_t data_offset;
	uint8_t *raw;
	char *utf8;
	size_t out_len = 0;
	int err;

	err = read_header_field(pid, addr, off->unicode_state, &state, sizeof(state));
	if (err == 0)
		err = read_header_field(pid, addr, off->unicode_length, &length, sizeof(length));
	if (err < 0)
		return err;
	kind = UNICODE_KIND(state);
	if (length < 0 || !UNICODE_COMPACT(state) || (kind != 1 && kind != 2 && kind != 4))
		return -EINVAL;
	if (UNICODE_ASCII(state) && kind != 1)
		return -EINVAL;
	data_offset = UNICODE_ASCII(state) ? off->unicode_ascii_data : off->unicode_compact_data;
	if (data_offset == PY_OFF_NONE)
		return -EINVAL;
	if ((uint64_t)length > max_chars)
		length = (int64_t)max_chars;
	raw = malloc((size_t)length * kind + 1);
	utf8 = malloc((size_t)length * 4 + 1);
	if (!raw || !utf8) {
		free(raw);
		free(utf8);
		return -ENOMEM;
	}
	err = target_mem_read(pid, addr + data_offset, raw, (size_t)length * kind);
	for (int64_t i = 0; err == 0 && i < length; i++) {
		uint32_t code_point;

		if (kind == 1) {
			code_point = raw[i];
		} else if (kind == 2) {
			uint16_t unit;

			memcpy(&unit, raw + i * 2, sizeof(unit));
			code_point = unit;
		} else {
			memcpy(&code_point, raw + i * 4, sizeof(code_point));
		}
		out_len += utf8_encode(code_point, utf8 + out_len);
	}
	free(raw);
	if (err < 0) {
		free(utf8);
		return err;
	}
	utf8[out_len] = 0;
	*text = utf8;
	*len = out_len;
	return 0;
}

static int read_unicode(pid_t pid, const struct py_offsets *off, uint64_t addr, char **text, size_t *len)
{
	return read_unicode_within(pid, off, addr, SYMBOLIZE_PY_MAX_STRING_CHARS, text, len);
}

int symbolize_py_read_str(pid_t pid, const struct py_offsets *off, uint64_t addr, size_t max_chars, char **text,
			  size_t *len)
{
	if (off->string_kind != PY_STRING_UNICODE)
		return -EINVAL;
	return read_unicode_within(pid, off, addr, max_chars, text, len);
}

/* How many bytes a bytes object holds (at most max_len of them if truncate, else -E2BIG past it). */
static int bytes_object_len(pid_t pid, const struct py_offsets *off, uint64_t addr, size_t max_len, bool truncate,
			    size_t *len)
{
	int64_t size;
	int err;

	err = read_header_field(pid, addr, off->bytes_size, &size, sizeof(size));
	if (err < 0)
		return err;
	if (off->bytes_data == PY_OFF_NONE || size < 0)
		return -EINVAL;
	if ((uint64_t)size > max_len) {
		if (!truncate)
			return -E2BIG;
		size = (int64_t)max_len;
	}
	*len = (size_t)size;
	return 0;
}

/* A bytes object (2.7 str) into a malloc'd buffer, NUL-terminated; at most max_len bytes. */
static int read_bytes(pid_t pid, const struct py_offsets *off, uint64_t addr, size_t max_len, bool truncate,
		      uint8_t **data, size_t *len)
{
	uint8_t *buffer;
	int err = bytes_object_len(pid, off, addr, max_len, truncate, len);

	if (err < 0)
		return err;
	buffer = malloc(*len + 1);
	if (!buffer)
		return -ENOMEM;
	err = target_mem_read(pid, addr + off->bytes_data, buffer, *len);
	if (err < 0) {
		free(buffer);
		return err;
	}
	buffer[*len] = 0;
	*data = buffer;
	return 0;
}

/* A code object's line table (a bytes object) into a block of bulk_alloc: an attacker's are a
 * megabyte each, by the dozen, until the budget evicts them (util/bulk_alloc.h). Charged to
 * the budget from the object's header, so that a refused table costs no read. */
static int read_linetable(struct symbolize_py_cache *cache, struct code_entry *entry, const struct py_offsets *off,
			  uint64_t addr)
{
	size_t len;
	uint8_t *table;
	int err = bytes_object_len(entry->pid, off, addr, SYMBOLIZE_PY_MAX_LINETABLE_BYTES, false, &len);

	if (err < 0)
		return err;
	if (!charge_linetable(cache, entry, len))
		return 0;
	table = bulk_alloc(len);
	err = table ? target_mem_read(entry->pid, addr + off->bytes_data, table, len) : -ENOMEM;
	if (err < 0) {
		bulk_free(table);
		if (cache->budget && len)
			target_budget_release(cache->budget, cache->budget_store, len);
		return err;
	}
	cache->stats.linetable_bytes_read += len;
	entry->linetable = table;
	entry->linetable_len = len;
	return 0;
}

/* Whether the target budget takes a name not interned yet: what it adds to the table, its
 * index and hash slots with its bytes (a short name costs several times its bytes). Names are
 * never evicted (those of forgotten code objects go when the table is compacted): the table
 * may take SYMBOLIZE_PY_NAMES_BUDGET_SHARE of the limit at most, so that they never crowd out
 * what can (every new code object would evict the last). */
static bool charge_name(struct symbolize_py_cache *cache, const char *text, size_t len)
{
	size_t cost;

	if (!cache->budget || intern_find(&cache->strings, text, len + 1) >= 0)
		return true;
	cost = intern_add_growth(&cache->strings, len + 1);
	if (intern_held_bytes(&cache->strings) + cost > target_budget_limit(cache->budget) / SYMBOLIZE_PY_NAMES_BUDGET_SHARE) {
		target_budget_refuse(cache->budget, cache->names_store);
		return false;
	}
	return target_budget_charge(cache->budget, cache->names_store, cost) == 0;
}

/* The names' store holds what the table holds now (the placeholder, interned past the budget,
 * is not charged before). */
static void true_up_names(struct symbolize_py_cache *cache)
{
	if (cache->budget)
		target_budget_set_held(cache->budget, cache->names_store, intern_held_bytes(&cache->strings));
}

/* Every name a kept code object uses, into fresh: 0 or -ENOMEM. */
static int intern_names_in_use(const struct symbolize_py_cache *cache, struct intern_table *fresh)
{
	for (size_t i = 0; i < cache->code_count; i++) {
		const char *names[] = { cache->codes[i]->file, cache->codes[i]->name };

		for (size_t j = 0; j < 2; j++)
			if (intern_add_string(fresh, names[j]))
				return -ENOMEM;
	}
	return 0;
}

int symbolize_py_compact_names(struct symbolize_py_cache *cache)
{
	size_t held = intern_held_bytes(&cache->strings);
	struct intern_table fresh;
	int err;

	if (!intern_compaction_due(held, SYMBOLIZE_PY_COMPACT_MIN_BYTES, cache->names_compacted_bytes))
		return 0;
	/* Every name is copied before any entry moves to the new table: a failed copy leaves all
	 * of them where they were. */
	intern_init(&fresh);
	err = intern_names_in_use(cache, &fresh);
	if (err) {
		intern_free(&fresh);
		return err;
	}
	for (size_t i = 0; i < cache->code_count; i++) {
		struct code_entry *entry = cache->codes[i];

		entry->file = intern_string_in(&fresh, entry->file);
		entry->name = intern_string_in(&fresh, entry->name);
	}
	intern_free(&cache->strings);
	cache->strings = fresh;
	cache->names_compacted_bytes = intern_held_bytes(&cache->strings);
	cache->stats.name_compactions++;
	cache->generation++;
	true_up_names(cache);
	return 1;
}

/* A name or file name (NUL-terminated: an embedded NUL ends it), interned in the cache. */
static int keep_name(struct symbolize_py_cache *cache, const char *text, const char **out)
{
	size_t len = strlen(text);

	/* Names cannot be evicted (frames hold them until symbolize_py_compact_names): past the budget,
	 * a name not already known is replaced, and its code object keeps the placeholder. */
	if ((cache->strings.bytes + len > SYMBOLIZE_PY_MAX_NAME_BYTES || !charge_name(cache, text, len)) &&
	    intern_find(&cache->strings, text, len + 1) < 0) {
		cache->stats.names_over_budget++;
		*out = intern_string(cache, SYMBOLIZE_PY_NAME_OVER_BUDGET, strlen(SYMBOLIZE_PY_NAME_OVER_BUDGET));
	} else {
		*out = intern_string(cache, text, len);
	}
	true_up_names(cache);
	return *out ? 0 : -ENOMEM;
}

/* A name or file name read from the target, interned in the cache. */
static int read_name(struct symbolize_py_cache *cache, pid_t pid, const struct py_offsets *off, uint64_t addr,
		     const char **out)
{
	char *text = NULL;
	size_t len = 0;
	int err;

	if (off->string_kind == PY_STRING_UNICODE)
		err = read_unicode(pid, off, addr, &text, &len);
	else
		err = read_bytes(pid, off, addr, SYMBOLIZE_PY_MAX_STRING_CHARS, true, (uint8_t **)&text, &len);
	if (err < 0)
		return err;
	err = keep_name(cache, text, out);
	free(text);
	return err;
}

static bool field_in(uint32_t offset, size_t width, size_t span)
{
	return offset != PY_OFF_NONE && offset + width <= span;
}

static uint64_t pointer_at(const uint8_t *object, uint32_t offset)
{
	uint64_t value;

	memcpy(&value, object + offset, sizeof(value));
	return value;
}

static int32_t int_at(const uint8_t *object, uint32_t offset)
{
	int32_t value;

	memcpy(&value, object + offset, sizeof(value));
	return value;
}

/* How many bytes of the code object hold every field we use. */
static size_t code_read_span(const struct py_offsets *off)
{
	const uint32_t pointer_fields[] = { off->code_filename, off->code_name, off->code_qualname,
					    off->code_linetable };
	size_t span = 0;

	for (size_t i = 0; i < ARRAY_SIZE(pointer_fields); i++) {
		if (pointer_fields[i] != PY_OFF_NONE && pointer_fields[i] + 8u > span)
			span = pointer_fields[i] + 8u;
	}
	if (off->code_argcount != PY_OFF_NONE && off->code_argcount + 4u > span)
		span = off->code_argcount + 4u;
	if (off->code_firstlineno != PY_OFF_NONE && off->code_firstlineno + 4u > span)
		span = off->code_firstlineno + 4u;
	return span;
}

/* A str's identity, read as BPF reads it for the code object's (py_string_identity). */
static int read_string_identity(pid_t pid, const struct py_offsets *off, uint64_t string_addr, uint64_t *identity)
{
	uint8_t span[PY_STRING_SPAN_MAX + 8] = { 0 };
	uint32_t len = py_string_span(off);
	int err;

	if (len == 0)
		return -EINVAL;
	err = target_mem_read(pid, string_addr + py_string_span_low(off), span, len);
	if (err < 0)
		return err;
	*identity = py_string_identity(off, span);
	return 0;
}

/* Fill entry from the code object at entry->code_addr: its identity first, then the strings. */
static int read_code_object(struct symbolize_py_cache *cache, const struct py_proc_config *config,
			    struct code_entry *entry)
{
	const struct py_offsets *off = &config->off;
	uint8_t object[SYMBOLIZE_PY_MAX_CODE_READ];
	size_t span = code_read_span(off);
	uint64_t filename_identity, name_identity;
	uint32_t name_offset;
	int err;

	if (span > sizeof(object) || !field_in(off->code_argcount, 4, span) ||
	    !field_in(off->code_firstlineno, 4, span) || !field_in(off->code_filename, 8, span) ||
	    !field_in(off->code_name, 8, span) || !field_in(off->code_linetable, 8, span))
		return -EINVAL;
	err = target_mem_read(entry->pid, entry->code_addr, object, span);
	if (err < 0)
		return err;
	entry->firstlineno = int_at(object, off->code_firstlineno);
	name_offset = py_code_shown_name(off);
	err = read_string_identity(entry->pid, off, pointer_at(object, off->code_filename), &filename_identity);
	if (err == 0)
		err = read_string_identity(entry->pid, off, pointer_at(object, name_offset), &name_identity);
	if (err < 0)
		return err;
	if (py_code_checksum(entry->firstlineno, int_at(object, off->code_argcount),
			     pointer_at(object, off->code_filename), pointer_at(object, name_offset), filename_identity,
			     name_identity) != entry->checksum)
		return -ESTALE;
	err = read_name(cache, entry->pid, off, pointer_at(object, off->code_filename), &entry->file);
	if (err == 0)
		err = read_name(cache, entry->pid, off, pointer_at(object, name_offset), &entry->name);
	if (err == 0)
		err = read_linetable(cache, entry, off, pointer_at(object, off->code_linetable));
	if (err == -E2BIG) {
		/* Still worth a name; re-reading would not make the table smaller. */
		entry->linetable_missing = true;
		err = 0;
	}
	return err;
}

/* Text BPF copied into a note (up to cap bytes of a string len long; the file name's tail, the name's
 * head), with "..." where it was cut, into out (4 + cap bytes at least). */
static void note_text(const uint8_t *copied, uint32_t len, size_t cap, bool tail, char *out)
{
	size_t count = len < cap ? len : cap, at = 0;

	if (tail && len > cap) {
		memcpy(out, "...", 3);
		at = 3;
	}
	memcpy(out + at, copied, count);
	at += count;
	if (!tail && len > cap) {
		memcpy(out + at, "...", 3);
		at += 3;
	}
	out[at] = 0;
}

/* One of the note's strings as its text, or else read at its address if it is still the string BPF
 * saw (its identity), interned. */
static int noted_name(struct symbolize_py_cache *cache, pid_t pid, const struct py_offsets *off, bool copied,
		      const uint8_t *text, uint32_t len, size_t cap, bool tail, uint64_t addr, uint64_t identity,
		      const char **out)
{
	char shown[PBP_NOTE_FILE_BYTES + 8];
	uint64_t identity_now;
	int err;

	_Static_assert(PBP_NOTE_NAME_BYTES <= PBP_NOTE_FILE_BYTES, "shown holds either text");
	if (copied) {
		note_text(text, len, cap, tail, shown);
		return keep_name(cache, shown, out);
	}
	err = read_string_identity(pid, off, addr, &identity_now);
	if (err < 0)
		return err;
	if (identity_now != identity)
		return -ESTALE;
	return read_name(cache, pid, off, addr, out);
}

/*
 * Fill entry from BPF's note of the code object (struct pbp_code_note): its object is gone (or
 * another took its address), so its line table too: lines unknown. The note is checked to be of
 * the object the record ran (its checksum).
 */
static int read_noted_code(struct symbolize_py_cache *cache, const struct py_proc_config *config,
			   struct code_entry *entry)
{
	const struct py_offsets *off = &config->off;
	struct pbp_code_note note;
	int err;

	if (!cache->note_of)
		return -ENOENT;
	err = cache->note_of(cache->note_context, entry->pid, entry->code_addr, entry->checksum, &note);
	if (err < 0)
		return err;
	if (py_code_checksum(note.firstlineno, note.argcount, note.filename_addr, note.name_addr, note.filename_identity,
			     note.name_identity) != entry->checksum)
		return -ESTALE;
	err = noted_name(cache, entry->pid, off, note.flags & PBP_NOTE_FILE_TEXT, note.file_tail, note.filename_len,
			 PBP_NOTE_FILE_BYTES, true, note.filename_addr, note.filename_identity, &entry->file);
	if (err == 0)
		err = noted_name(cache, entry->pid, off, note.flags & PBP_NOTE_NAME_TEXT, note.name_head, note.name_len,
				 PBP_NOTE_NAME_BYTES, false, note.name_addr, note.name_identity, &entry->name);
	if (err < 0)
		return err;
	entry->firstlineno = note.firstlineno;
	entry->linetable_missing = true;
	entry->noted = true;
	cache->stats.noted++;
	return 0;
}

/* The live object's read failed (err): drop what it left, and name the object from its note if
 * BPF saved one that still holds; else err stays. */
static int read_code_or_note(struct symbolize_py_cache *cache, const struct py_proc_config *config,
			     struct code_entry *entry)
{
	int err = read_code_object(cache, config, entry);

	if (err == 0 || err == -ENOMEM || err == -EINVAL)
		return err;
	release_linetable(cache, entry);
	bulk_free(entry->linetable);
	entry->linetable = NULL;
	entry->linetable_len = 0;
	entry->linetable_missing = false;
	entry->file = entry->name = NULL;
	return read_noted_code(cache, config, entry) == 0 ? 0 : err;
}

int symbolize_py_code_checksum(pid_t pid, const struct py_offsets *off, uint64_t code_addr, uint32_t *checksum)
{
	uint8_t object[SYMBOLIZE_PY_MAX_CODE_READ];
	size_t span = code_read_span(off);
	uint32_t name_offset = py_code_shown_name(off);
	uint64_t filename_identity, name_identity;
	int err;

	if (span > sizeof(object) || !field_in(off->code_argcount, 4, span) ||
	    !field_in(off->code_firstlineno, 4, span) || !field_in(off->code_filename, 8, span) ||
	    !field_in(name_offset, 8, span))
		return -EINVAL;
	err = target_mem_read(pid, code_addr, object, span);
	if (err == 0)
		err = read_string_identity(pid, off, pointer_at(object, off->code_filename), &filename_identity);
	if (err == 0)
		err = read_string_identity(pid, off, pointer_at(object, name_offset), &name_identity);
	if (err < 0)
		return err;
	*checksum = py_code_checksum(int_at(object, off->code_firstlineno), int_at(object, off->code_argcount),
				     pointer_at(object, off->code_filename), pointer_at(object, name_offset),
				     filename_identity, name_identity);
	return 0;
}

/* The byte offset into the code of the instruction, or -1 if the frame has not started. */
static int64_t instruction_byte_offset(const struct py_offsets *off, uint32_t instr_offset)
{
	switch (off->lasti_kind) {
	case PY_LASTI_INT_BYTES:
		return (int32_t)instr_offset < 0 ? -1 : (int64_t)(int32_t)instr_offset;
	case PY_LASTI_INT_UNITS:
		return (int32_t)instr_offset < 0 ? -1 : (int64_t)(int32_t)instr_offset * 2;
	default: /* PY_LASTI_PTR */
		if (off->code_code_adaptive == PY_OFF_NONE)
			return -1;
		return (int64_t)instr_offset < (int64_t)off->code_code_adaptive
			       ? -1
			       : (int64_t)instr_offset - off->code_code_adaptive;
	}
}

static void locate(const struct code_entry *code, const struct py_offsets *off, uint32_t instr_offset,
		   struct py_location *location)
{
	int64_t byte_offset = instruction_byte_offset(off, instr_offset);

	if (byte_offset < 0) {
		*location = (struct py_location){ code->firstlineno, code->firstlineno, -1, -1 };
		return;
	}
	if (byte_offset > UINT32_MAX || code->linetable_missing ||
	    py_linetable_lookup(code->major, code->minor, code->linetable, code->linetable_len,
				code->firstlineno, (uint32_t)byte_offset, location) < 0)
		*location = (struct py_location){ -1, -1, -1, -1 };
}

/* The cached code object for the key, reading it on first sight. */
static int code_for(struct symbolize_py_cache *cache, pid_t pid, const struct py_proc_config *config,
		    uint64_t code_addr, uint32_t checksum, struct code_entry **out)
{
	struct code_entry *entry = find_code(cache, pid, code_addr, checksum);
	int err;

	if (entry) {
		entry->last_used = ++*cache->clock;
		*out = entry;
		return entry->status;
	}
	entry = calloc(1, sizeof(*entry));
	if (!entry)
		return -ENOMEM;
	entry->pid = pid;
	entry->code_addr = code_addr;
	entry->checksum = checksum;
	entry->major = (config->version_hex >> 24) & 0xff;
	entry->minor = (config->version_hex >> 16) & 0xff;
	err = read_code_or_note(cache, config, entry);
	if (err < 0 && err != -ESTALE) {
		/* Not remembered: a failed read may succeed later (-ESRCH ends with symbolize_py_forget_pid). */
		release_linetable(cache, entry);
		code_entry_free(entry);
		cache->stats.read_errors++;
		return err;
	}
	if (err == -ESTALE) {
		/* The object BPF saw is gone for good: remember the refusal, not the new object. */
		release_linetable(cache, entry);
		bulk_free(entry->linetable);
		entry->linetable = NULL;
		entry->linetable_len = 0;
		entry->status = -ESTALE;
	}
	entry->last_used = ++*cache->clock;
	if (!charge_entry(cache)) {
		release_linetable(cache, entry);
		code_entry_free(entry);
		return -ENOSPC;
	}
	if (add_code(cache, entry) < 0) {
		if (cache->budget)
			target_budget_release(cache->budget, cache->entries_store, CODE_ENTRY_OWN_BYTES);
		release_linetable(cache, entry);
		code_entry_free(entry);
		return -ENOMEM;
	}
	err = drop_line_tables(cache, entry);
	if (err == 0)
		err = evict_least_used(cache);
	if (err < 0)
		return err;
	*out = entry;
	return entry->status;
}

/*
 * The opcode byte of the instruction a 3.11+ frame is at, from the live code object's
 * co_code_adaptive (so specialised, as it was when this (code object, offset) was first
 * resolved), or -1: not asked, before 3.11, a frame not started, past the scan's cap, or a
 * failed read. A caller's pointer may lie in its CALL's inline caches (3.12 leaves it on the
 * last), whose bytes are data: the instructions from the start are stepped over with their
 * version's cache sizes to the one that holds the offset. Once per slot: a frame hit costs
 * nothing more. A hostile target can only make it name a wrong instruction.
 */
static int16_t read_opcode(const struct symbolize_py_cache *cache, pid_t pid, const struct py_offsets *off,
			   const struct code_entry *code, uint32_t instr_offset, uint64_t *opcode_addr)
{
	int64_t byte_offset = instruction_byte_offset(off, instr_offset);
	uint8_t *bytes;
	int16_t opcode = -1;
	size_t at = 0;

	if (!cache->opcodes || code->noted || off->lasti_kind != PY_LASTI_PTR || byte_offset < 0 ||
	    byte_offset > SYMBOLIZE_PY_MAX_OPCODE_SCAN || !py_opcode_version_known(code->major, code->minor))
		return -1;
	bytes = malloc((size_t)byte_offset + 2);
	if (!bytes || target_mem_read(pid, code->code_addr + off->code_code_adaptive, bytes,
				      (size_t)byte_offset + 2) < 0) {
		free(bytes);
		return -1;
	}
	/* each step moves on by at least one unit: at most byte_offset / 2 + 1 of them */
	while (at <= (size_t)byte_offset) {
		int caches = py_opcode_cache_units(code->major, code->minor, bytes[at]);
		size_t next = at + 2 * (1 + (size_t)(caches < 0 ? 0 : caches));

		if (next > (size_t)byte_offset) {
			opcode = (int16_t)bytes[at];
			*opcode_addr = code->code_addr + off->code_code_adaptive + at;
			break;
		}
		if (caches < 0)
			break;
		at = next;
	}
	free(bytes);
	/* 255 is the formats' "none" (Tachyon); no CPython has an instruction there */
	return opcode == 255 ? -1 : opcode;
}

static void fill_frame(struct pf_frame *frame, const struct code_entry *code, const struct py_location *location,
		       int16_t opcode)
{
	frame->kind = PF_FRAME_PYTHON;
	frame->file = code->file;
	frame->name = code->name;
	frame->line = location->line;
	frame->end_line = location->end_line;
	frame->column = location->column;
	frame->end_column = location->end_column;
	frame->opcode = opcode;
	frame->function_line = code->firstlineno > 0 ? code->firstlineno : 0;
}

int symbolize_py_resolve(struct symbolize_py_cache *cache, pid_t pid, const struct py_proc_config *config,
		  uint64_t code_addr, uint32_t checksum, uint32_t instr_offset, struct pf_frame *frame)
{
	struct frame_slot *hit = find_frame(cache, pid, code_addr, checksum, instr_offset);
	struct frame_slot slot;
	struct code_entry *code;
	int err;

	if (hit) {
		cache->stats.hits++;
		hit->code->last_used = ++*cache->clock;
		fill_frame(frame, hit->code, &hit->location, hit->opcode);
		return 0;
	}
	cache->stats.misses++;
	err = code_for(cache, pid, config, code_addr, checksum, &code);
	if (err < 0) {
		if (err == -ESTALE)
			cache->stats.stale++;
		return err;
	}
	slot = (struct frame_slot){ .code_addr = code_addr, .pid = pid, .checksum = checksum,
				    .instr_offset = instr_offset, .used = true, .code = code };
	locate(code, &config->off, instr_offset, &slot.location);
	slot.opcode = read_opcode(cache, pid, &config->off, code, instr_offset, &slot.opcode_addr);
	err = add_frame(cache, &slot);
	if (err < 0)
		return err;
	fill_frame(frame, code, &slot.location, slot.opcode);
	return 0;
}
