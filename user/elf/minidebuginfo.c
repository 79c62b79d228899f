// SPDX-License-Identifier: MIT
#include "elf/minidebuginfo.h"

#include <errno.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/array.h"

/* The first output buffer; it doubles from there as the stream expands, up to the budget. */
#define MINIDEBUGINFO_FIRST_BYTES ((size_t)64 << 10)

static int lzma_error(lzma_ret ret)
{
	switch (ret) {
	case LZMA_MEM_ERROR:
		return -ENOMEM;
	case LZMA_MEMLIMIT_ERROR:
		return -E2BIG;
	default: /* LZMA_FORMAT_ERROR, LZMA_DATA_ERROR, LZMA_BUF_ERROR (truncated), ... */
		return -EBADMSG;
	}
}

/* Runs the decoder over the whole input into *out, growing it up to max_bytes. */
static int decode_stream(lzma_stream *stream, size_t max_bytes, uint8_t **out, size_t *out_len)
{
	size_t capacity = 0;
	lzma_ret ret = LZMA_OK;

	*out_len = 0;
	while (ret == LZMA_OK) {
		size_t room;

		if (*out_len >= max_bytes)
			return -E2BIG;
		if (array_reserve((void **)out, &capacity, *out_len + 1, 1, MINIDEBUGINFO_FIRST_BYTES))
			return -ENOMEM;
		room = (capacity < max_bytes ? capacity : max_bytes) - *out_len;
		stream->next_out = *out + *out_len;
		stream->avail_out = room;
		ret = lzma_code(stream, LZMA_FINISH);
		*out_len += room - stream->avail_out;
	}
	return ret == LZMA_STREAM_END ? 0 : lzma_error(ret);
}

int minidebuginfo_decompress(const void *in, size_t in_len, size_t max_bytes, void **out, size_t *out_len)
{
	lzma_stream stream = LZMA_STREAM_INIT;
	uint8_t *decoded = NULL;
	lzma_ret ret;
	int err;

	*out_len = 0;
	/* One .xz stream (what xz writes); whatever follows it is ignored. */
	ret = lzma_stream_decoder(&stream, MINIDEBUGINFO_MAX_DECODER_BYTES, 0);
	if (ret != LZMA_OK)
		return lzma_error(ret);
	stream.next_in = in;
	stream.avail_in = in_len;
	err = decode_stream(&stream, max_bytes, &decoded, out_len);
	lzma_end(&stream);
	if (err) {
		free(decoded);
		return err;
	}
	*out = decoded;
	return 0;
}

int minidebuginfo_open(const struct elf_file *file, uint64_t *bytes_left, struct elf_file *debugdata)
{
	const void *section;
	size_t section_len, image_len = 0, max_bytes = MINIDEBUGINFO_MAX_BYTES;
	void *image;
	char name[sizeof(file->path) + 32];
	int err;

	err = elf_file_section_data(file, ".gnu_debugdata", &section, &section_len);
	if (err)
		return err == -ENODATA ? -ENOENT : err;
	if (section_len > MINIDEBUGINFO_MAX_COMPRESSED_BYTES)
		return -E2BIG;
	if (bytes_left && *bytes_left < max_bytes)
		max_bytes = (size_t)*bytes_left;
	err = minidebuginfo_decompress(section, section_len, max_bytes, &image, &image_len);
	if (bytes_left)
		*bytes_left -= image_len;
	if (err)
		return err;
	snprintf(name, sizeof(name), "%s:.gnu_debugdata", file->path);
	return elf_file_open_memory(debugdata, image, image_len, name);
}
