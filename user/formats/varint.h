/* SPDX-License-Identifier: MIT */
/*
 * The two integer encodings of our formats:
 *  - MOJO's varint: sign-magnitude; first byte = continue bit, sign bit,
 *    6 value bits; later bytes 7 value bits (low groups first).
 *  - LEB128 (Tachyon): unsigned, 7 bits per byte, and zigzag for signed.
 * Encoders write at most VARINT_MAX_BYTES and return the count; decoders
 * return bytes consumed, or 0 if the input ends early or overflows 64 bits.
 */
#ifndef PYBPFPROF_VARINT_H
#define PYBPFPROF_VARINT_H

#include <stddef.h>
#include <stdint.h>

#define VARINT_MAX_BYTES 11

size_t varint_mojo_encode(int64_t value, uint8_t *out);
size_t varint_mojo_decode(const uint8_t *in, size_t len, int64_t *value);
/* The magnitude alone (MOJO's unsigned uses: TIME metric). */
size_t varint_mojo_unsigned_encode(uint64_t value, uint8_t *out);
size_t varint_mojo_unsigned_decode(const uint8_t *in, size_t len, uint64_t *value);

size_t varint_leb128_encode(uint64_t value, uint8_t *out);
size_t varint_leb128_decode(const uint8_t *in, size_t len, uint64_t *value);
size_t varint_zigzag_encode(int64_t value, uint8_t *out);
size_t varint_zigzag_decode(const uint8_t *in, size_t len, int64_t *value);

#endif
