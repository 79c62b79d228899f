// SPDX-License-Identifier: MIT
/*
 * Thread.name from the target's memory (2.7, 3.6-3.13).
 *
 * 2.7: as 3.6 below, but the method is "__bootstrap" and the attribute "_Thread__name"
 * (private names), strings are
 * PyStringObjects, and the dict is an open-addressing table: ma_mask at 32, ma_table at 40,
 * ma_mask + 1 {hash, key, value} slots.
 *
 * 3.6-3.10: the frames are PyFrameObjects, linked from the thread state (py_offsets), whose
 * f_localsplus is at 376 (3.6), 360 (3.7-3.9) or 352 (3.10); the instance's __dict__ is at the
 * type's tp_dictoffset (at 288 in PyTypeObject); the dict's keys (ma_keys at 32) are
 * {refcnt, dk_size, lookup, usable, nentries} then dk_size indices of 1, 2, 4 or 8 bytes, then
 * {hash, key, value} entries; a split dict's values are at ma_values (40), by entry index.
 *
 * 3.11-3.13, the layouts read beyond py_offsets:
 *  - _PyInterpreterFrame.localsplus: right after `owner`, at 72 in 3.11-3.13.
 *  - A heap type's as_async, as_number and as_buffer are stored in the PyHeapTypeObject after
 *    its PyTypeObject, and its tp_as_* point at them: tp_as_async gives where they start, the
 *    other two check it, and ht_cached_keys (the shared keys of its instances' attributes)
 *    follows the 55 slots of the five method tables and three object pointers.
 *  - The split keys (PyDictKeysObject, the same 3.11-3.13): log2 of the index bytes at 9,
 *    kind at 10 (2: split), entry count at 24, indices at 32, then {key, value} entries.
 *  - An instance's attribute values: 3.11 a PyDictValues * at -32; 3.12 one at -24, stored
 *    minus 1 (odd: a dict pointer is even); 3.13 inline at tp_basicsize, behind a header
 *    whose 4th byte says whether they are valid (not moved into a dict).
 * A value at the index of the key "_name" is the name.
 */
#include "python/py_thread_name.h"

#include <errno.h>
#include <string.h>

#include "proc/target_mem.h"

#define LOCALSPLUS_311_313 72u
#define TYPE_BASICSIZE 32u
#define TYPE_AS_ASYNC 80u
#define TYPE_AS_NUMBER 96u
#define TYPE_AS_BUFFER 160u
#define TYPE_FLAGS 168u
#define HEAP_AS_NUMBER_AFTER_ASYNC (4u * 8u)
#define HEAP_AS_BUFFER_AFTER_ASYNC ((4u + 36u + 3u + 10u) * 8u)
#define HEAP_CACHED_KEYS_AFTER_ASYNC ((4u + 36u + 3u + 10u + 2u + 3u) * 8u)
#define TPFLAGS_INLINE_VALUES (1ul << 2)
#define KEYS_HEADER 32u
#define KEYS_KIND_SPLIT 2u
#define KEYS_ENTRIES_MAX PY_THREAD_NAME_SLOTS
#define UNICODE_COMPACT_ASCII 0x60u
#define BOOTSTRAP "_bootstrap"
#define BOOTSTRAP_27 "__bootstrap" /* a private method there */
#define TYPE_DICTOFFSET 288u
#define DICT_KEYS 32u
#define DICT_VALUES 40u
#define OLD_KEYS_SIZE 8u
#define OLD_KEYS_NENTRIES 32u
#define OLD_KEYS_INDICES 40u
#define OLD_KEYS_SIZE_MAX PY_THREAD_NAME_SLOTS
#define DICT27_MASK 32u
#define DICT27_TABLE 40u

/* An ASCII str's (2.7: a str's) text into out (cut to size); its full length, or negative errno. */
static int read_ascii_str(pid_t pid, const struct py_offsets *off, uint64_t str, char *out, size_t size)
{
	bool is_bytes = off->string_kind == PY_STRING_BYTES;
	int64_t length;
	uint32_t state = UNICODE_COMPACT_ASCII;
	size_t copy;
	int err;

	if (!str || size == 0)
		return -EFAULT;
	err = target_mem_read(pid, str + (is_bytes ? off->bytes_size : off->unicode_length), &length, sizeof(length));
	if (!err && !is_bytes)
		err = target_mem_read(pid, str + off->unicode_state, &state, sizeof(state));
	if (err)
		return err;
	if ((state & UNICODE_COMPACT_ASCII) != UNICODE_COMPACT_ASCII || length < 0 || length > INT32_MAX)
		return -ENOENT;
	copy = (size_t)length < size - 1 ? (size_t)length : size - 1;
	err = target_mem_read(pid, str + (is_bytes ? off->bytes_data : off->unicode_ascii_data), out, copy);
	if (err)
		return err;
	out[copy] = 0;
	return (int)length;
}

static bool str_equals(pid_t pid, const struct py_offsets *off, uint64_t str, const char *text)
{
	char buffer[16];
	int length = read_ascii_str(pid, off, str, buffer, sizeof(buffer));

	return length == (int)strlen(text) && strcmp(buffer, text) == 0;
}

/* The outermost Python frame of the thread, or 0. */
static uint64_t root_frame(pid_t pid, const struct py_offsets *off, uint64_t tstate)
{
	uint64_t frame = 0, root = 0;

	if (target_mem_read_u64(pid, tstate + off->tstate_frame, &frame))
		return 0;
	if (off->frame_link == PY_FRAME_LINK_CFRAME && (!frame || target_mem_read_u64(pid, frame + off->cframe_current_frame, &frame)))
		return 0;
	for (unsigned i = 0; frame && i < PY_THREAD_NAME_FRAMES; i++) {
		uint8_t owner;

		if (target_mem_read(pid, frame + off->frame_owner, &owner, 1))
			return 0;
		if (owner < off->owner_boundary)
			root = frame;
		if (target_mem_read_u64(pid, frame + off->frame_previous, &frame))
			return 0;
	}
	return frame ? 0 : root;
}

/* Where the instance's attribute values start (values[0]), or 0. */
static uint64_t instance_values(pid_t pid, unsigned minor, uint64_t object, uint64_t type)
{
	uint64_t values = 0, basicsize, flags;
	uint8_t header[4];

	switch (minor) {
	case 11:
		return target_mem_read_u64(pid, object - 32, &values) ? 0 : values;
	case 12:
		if (target_mem_read_u64(pid, object - 24, &values) || !(values & 1))
			return 0;
		return values + 1; /* stored one byte before, which makes it odd */
	case 13:
		if (target_mem_read_u64(pid, type + TYPE_FLAGS, &flags) || !(flags & TPFLAGS_INLINE_VALUES) ||
		    target_mem_read_u64(pid, type + TYPE_BASICSIZE, &basicsize) || basicsize > (1u << 20) ||
		    target_mem_read(pid, object + basicsize, header, sizeof(header)) || header[3] != 1)
			return 0;
		return object + basicsize + 8;
	default:
		return 0;
	}
}

/* The shared keys of type's instances, checked to be a heap type's; 0 if not. */
static uint64_t cached_keys(pid_t pid, uint64_t type)
{
	uint64_t as_async, as_number, as_buffer, keys;

	if (target_mem_read_u64(pid, type + TYPE_AS_ASYNC, &as_async) ||
	    target_mem_read_u64(pid, type + TYPE_AS_NUMBER, &as_number) ||
	    target_mem_read_u64(pid, type + TYPE_AS_BUFFER, &as_buffer))
		return 0;
	if (as_async <= type || as_async - type > 1024 || as_number != as_async + HEAP_AS_NUMBER_AFTER_ASYNC ||
	    as_buffer != as_async + HEAP_AS_BUFFER_AFTER_ASYNC)
		return 0;
	return target_mem_read_u64(pid, as_async + HEAP_CACHED_KEYS_AFTER_ASYNC, &keys) ? 0 : keys;
}

/* The index of key among the split keys, or -ENOENT. */
static int key_index(pid_t pid, const struct py_offsets *off, uint64_t keys, const char *key)
{
	uint8_t header[KEYS_HEADER];
	uint64_t entries[2 * KEYS_ENTRIES_MAX];
	int64_t count;

	if (!keys || target_mem_read(pid, keys, header, sizeof(header)))
		return -ENOENT;
	memcpy(&count, header + 24, sizeof(count));
	if (header[10] != KEYS_KIND_SPLIT || header[9] > 16 || count <= 0 || count > KEYS_ENTRIES_MAX)
		return -ENOENT;
	if (target_mem_read(pid, keys + KEYS_HEADER + (1ull << header[9]), entries, (size_t)count * 16))
		return -ENOENT;
	for (int i = 0; i < (int)count; i++)
		if (entries[2 * i] && str_equals(pid, off, entries[2 * i], key))
			return i;
	return -ENOENT;
}

/* f_localsplus in 2.7's and 3.6-3.10's PyFrameObject; 0 for another version. */
static uint32_t old_localsplus(unsigned major, unsigned minor)
{
	if (major == 2)
		return minor == 7 ? 376 : 0;
	return minor == 6 ? 376 : minor >= 7 && minor <= 9 ? 360 : minor == 10 ? 352 : 0;
}

/* The value of key in a 2.7 dict, or 0. */
static uint64_t dict27_lookup(pid_t pid, const struct py_offsets *off, uint64_t dict, const char *key)
{
	uint64_t mask, table, entry[3];

	if (target_mem_read_u64(pid, dict + DICT27_MASK, &mask) || target_mem_read_u64(pid, dict + DICT27_TABLE, &table) ||
	    mask >= OLD_KEYS_SIZE_MAX || (mask & (mask + 1)) || !table)
		return 0;
	for (uint64_t i = 0; i <= mask; i++) {
		if (target_mem_read(pid, table + i * sizeof(entry), entry, sizeof(entry)))
			return 0;
		if (entry[1] && entry[2] && str_equals(pid, off, entry[1], key))
			return entry[2];
	}
	return 0;
}

/* The outermost frame of the thread (3.6-3.10), or 0. */
static uint64_t old_root_frame(pid_t pid, const struct py_offsets *off, uint64_t tstate)
{
	uint64_t frame = 0, root = 0;

	if (target_mem_read_u64(pid, tstate + off->tstate_frame, &frame))
		return 0;
	for (unsigned i = 0; frame && i < PY_THREAD_NAME_FRAMES; i++) {
		root = frame;
		if (target_mem_read_u64(pid, frame + off->frame_previous, &frame))
			return 0;
	}
	return frame ? 0 : root;
}

/* The value of the str key `key` in the attribute dict of object (2.7, 3.6-3.10), or 0. */
static uint64_t old_attribute(pid_t pid, const struct py_offsets *off, uint64_t object, const char *key)
{
	uint64_t type, dict, keys, values, size, count, entry[3], value = 0;
	int64_t dict_offset;
	unsigned index_bytes;

	if (target_mem_read_u64(pid, object + 8, &type) ||
	    target_mem_read(pid, type + TYPE_DICTOFFSET, &dict_offset, sizeof(dict_offset)) || dict_offset <= 0 ||
	    dict_offset > 4096 || target_mem_read_u64(pid, object + (uint64_t)dict_offset, &dict) || !dict)
		return 0;
	if (off->string_kind == PY_STRING_BYTES)
		return dict27_lookup(pid, off, dict, key);
	if (target_mem_read_u64(pid, dict + DICT_KEYS, &keys) || target_mem_read_u64(pid, dict + DICT_VALUES, &values) ||
	    !keys || target_mem_read_u64(pid, keys + OLD_KEYS_SIZE, &size) ||
	    target_mem_read_u64(pid, keys + OLD_KEYS_NENTRIES, &count))
		return 0;
	if (size == 0 || size > OLD_KEYS_SIZE_MAX || (size & (size - 1)) || count > KEYS_ENTRIES_MAX || count > size)
		return 0;
	index_bytes = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t at = keys + OLD_KEYS_INDICES + size * index_bytes + i * sizeof(entry);

		if (target_mem_read(pid, at, entry, sizeof(entry)))
			return 0;
		if (!entry[1] || !str_equals(pid, off, entry[1], key))
			continue;
		if (!values)
			return entry[2];
		return target_mem_read_u64(pid, values + 8 * i, &value) ? 0 : value;
	}
	return 0;
}

/* 3.6-3.10: Thread.name of the thread, 0 or -ENOENT. */
static int old_thread_name(const struct py_target *python, uint64_t tstate_addr, char *out, size_t size)
{
	const struct py_offsets *off = &python->config.off;
	pid_t pid = python->pid;
	uint64_t frame = old_root_frame(pid, off, tstate_addr), code, name, thread;

	if (!frame || target_mem_read_u64(pid, frame + off->frame_code, &code) ||
	    target_mem_read_u64(pid, code + off->code_name, &name) ||
	    !str_equals(pid, off, name, python->major == 2 ? BOOTSTRAP_27 : BOOTSTRAP) ||
	    target_mem_read_u64(pid, frame + old_localsplus(python->major, python->minor), &thread) || !thread)
		return -ENOENT;
	name = old_attribute(pid, off, thread, python->major == 2 ? "_Thread__name" : "_name");
	return name && read_ascii_str(pid, off, name, out, size) >= 0 ? 0 : -ENOENT;
}

int py_thread_name_read(const struct py_target *python, uint64_t tstate_addr, char *out, size_t size)
{
	const struct py_offsets *off = &python->config.off;
	pid_t pid = python->pid;
	uint64_t frame, code, name, thread, type, values;
	int index;

	if (old_localsplus(python->major, python->minor))
		return old_thread_name(python, tstate_addr, out, size);
	if (python->major != 3 || python->minor < 11 || python->minor > 13 || off->string_kind != PY_STRING_UNICODE)
		return -ENOTSUP;
	frame = root_frame(pid, off, tstate_addr);
	if (!frame || target_mem_read_u64(pid, frame + off->frame_code, &code) ||
	    target_mem_read_u64(pid, (code & off->code_ptr_mask) + off->code_name, &name) ||
	    !str_equals(pid, off, name, BOOTSTRAP))
		return -ENOENT;
	if (target_mem_read_u64(pid, frame + LOCALSPLUS_311_313, &thread) || !thread ||
	    target_mem_read_u64(pid, thread + 8, &type))
		return -ENOENT;
	index = key_index(pid, off, cached_keys(pid, type), "_name");
	values = instance_values(pid, python->minor, thread, type);
	if (index < 0 || !values || target_mem_read_u64(pid, values + 8 * (uint64_t)index, &name))
		return -ENOENT;
	return read_ascii_str(pid, off, name, out, size) < 0 ? -ENOENT : 0;
}

uint64_t py_instance_attribute(const struct py_target *python, uint64_t object, const char *key)
{
	const struct py_offsets *off = &python->config.off;
	uint64_t type, values, value;
	int index;

	if (python->major != 3 || python->minor < 11 || python->minor > 13 || off->string_kind != PY_STRING_UNICODE ||
	    !object || target_mem_read_u64(python->pid, object + 8, &type))
		return 0;
	index = key_index(python->pid, off, cached_keys(python->pid, type), key);
	values = instance_values(python->pid, python->minor, object, type);
	if (index < 0 || !values || target_mem_read_u64(python->pid, values + 8 * (uint64_t)index, &value))
		return 0;
	return value;
}
