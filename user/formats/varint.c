// SPDX-License-Identifier: MIT
#include "formats/varint.h"

size_t varint_mojo_unsigned_encode(uint64_t value, uint8_t *out)
{
	size_t n = 0;
	uint8_t first = value & 0x3f;

	value >>= 6;
	out[n++] = first | (value ? 0x80 : 0);
	while (value) {
		uint8_t group = value & 0x7f;

		value >>= 7;
		out[n++] = group | (value ? 0x80 : 0);
	}
	return n;
}

size_t varint_mojo_encode(int64_t value, uint8_t *out)
{
	/* Negate in unsigned arithmetic: INT64_MIN has no positive twin. */
	uint64_t magnitude = value < 0 ? 0 - (uint64_t)value : (uint64_t)value;
	size_t n = varint_mojo_unsigned_encode(magnitude, out);

	if (value < 0)
		out[0] |= 0x40;
	return n;
}

static size_t mojo_magnitude_decode(const uint8_t *in, size_t len, uint64_t *magnitude,
				    int *negative)
{
	uint64_t value;
	unsigned shift = 6;
	size_t n = 1;

	if (len == 0)
		return 0;
	value = in[0] & 0x3f;
	*negative = (in[0] & 0x40) != 0;
	if (!(in[0] & 0x80)) {
		*magnitude = value;
		return 1;
	}
	for (;;) {
		uint64_t group;

		if (n >= len || n >= VARINT_MAX_BYTES)
			return 0;
		group = in[n] & 0x7f;
		if (shift >= 64 || (shift > 57 && (group >> (64 - shift))))
			return 0;
		value |= group << shift;
		shift += 7;
		if (!(in[n++] & 0x80))
			break;
	}
	*magnitude = value;
	return n;
}

size_t varint_mojo_unsigned_decode(const uint8_t *in, size_t len, uint64_t *value)
{
	int negative;
	size_t n = mojo_magnitude_decode(in, len, value, &negative);

	/* A set sign bit on an unsigned field is a corrupt file, not a value. */
	return n && !negative ? n : 0;
}

size_t varint_mojo_decode(const uint8_t *in, size_t len, int64_t *value)
{
	uint64_t magnitude;
	int negative;
	size_t n = mojo_magnitude_decode(in, len, &magnitude, &negative);

	if (!n || magnitude > (uint64_t)INT64_MAX)
		return 0;
	*value = negative ? -(int64_t)magnitude : (int64_t)magnitude;
	return n;
}

size_t varint_leb128_encode(uint64_t value, uint8_t *out)
{
	size_t n = 0;

	do {
		uint8_t group = value & 0x7f;

		value >>= 7;
		out[n++] = group | (value ? 0x80 : 0);
	} while (value);
	return n;
}

size_t varint_leb128_decode(const uint8_t *in, size_t len, uint64_t *value)
{
	uint64_t result = 0;
	unsigned shift = 0;
	size_t n = 0;

	for (;;) {
		uint64_t group;

		if (n >= len || n >= 10)
			return 0;
		group = in[n] & 0x7f;
		if (shift == 63 && group > 1)
			return 0;
		result |= group << shift;
		shift += 7;
		if (!(in[n++] & 0x80))
			break;
	}
	*value = result;
	return n;
}

size_t varint_zigzag_encode(int64_t value, uint8_t *out)
{
	uint64_t zz = ((uint64_t)value << 1) ^ (uint64_t)(value >> 63);

	return varint_leb128_encode(zz, out);
}

size_t varint_zigzag_decode(const uint8_t *in, size_t len, int64_t *value)
{
	uint64_t zz;
	size_t n = varint_leb128_decode(in, len, &zz);

	if (n)
		*value = (int64_t)(zz >> 1) ^ -(int64_t)(zz & 1);
	return n;
}
