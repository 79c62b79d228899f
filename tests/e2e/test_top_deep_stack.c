// SPDX-License-Identifier: MIT
/* `pybpfprof top` on a crafted MOJO file whose one sample is a million frames deep: it ends, exit 0. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <time.h>

#include "testlib.h"

#include "formats/mojo/mojo.h"
#include "formats/varint.h"
#include "profile/profile.h"

/* ---- crafted files: memory stays in proportion to the file ---- */

static size_t put_mojo_int(uint8_t *at, int64_t value)
{
	return varint_mojo_encode(value, at);
}

/*
 * One sample a million frames deep: 2 bytes a frame on disk, 40 in memory. The
 * reader must hold it once (not once more to hand it out): `top` reads it under
 * 64 MiB of address space.
 */
static void test_crafted_deep_stack(void **unused)
{
	enum { DEPTH = 1000000 };
	char path[PATH_MAX], err[1024];
	char *argv[] = { (char *)pybpfprof_binary(), "top", path, NULL };
	uint8_t *data = malloc((size_t)DEPTH * 2 + 256), *at = data;
	int status;

	(void)unused;
	assert_non_null(data);
	memcpy(at, MOJO_MAGIC, 3);
	at += 3;
	at += put_mojo_int(at, MOJO_VERSION);
	*at++ = MOJO_METADATA;
	memcpy(at, "mode\0cpu\0", 9);
	at += 9;
	*at++ = MOJO_STACK;
	at += put_mojo_int(at, 1);
	at += put_mojo_int(at, 0);
	memcpy(at, "1\0", 2);
	at += 2;
	*at++ = MOJO_STRING;
	at += put_mojo_int(at, 2);
	memcpy(at, "f.py\0", 5);
	at += 5;
	*at++ = MOJO_STRING;
	at += put_mojo_int(at, 3);
	memcpy(at, "fn\0", 3);
	at += 3;
	*at++ = MOJO_FRAME;
	at += put_mojo_int(at, 1);
	at += put_mojo_int(at, 2);
	at += put_mojo_int(at, 3);
	for (int i = 0; i < 4; i++)
		at += put_mojo_int(at, 1);
	for (size_t i = 0; i < DEPTH; i++) {
		*at++ = MOJO_FRAME_REF;
		at += put_mojo_int(at, 1);
	}
	*at++ = MOJO_METRIC_TIME;
	at += put_mojo_int(at, 1000);
	snprintf(path, sizeof(path), "%s/deep.mojo", test_tmpdir());
	assert_int_equal(write_whole_file(path, data, (size_t)(at - data)), 0);
	free(data);
	/* 96 MiB of address space: the program's own mappings (~30 MiB with its libraries) and
	 * the frames this one sample really holds (1M x 48 bytes), nothing amplified beyond. */
	status = run_limited("--as=100663296", argv, err, sizeof(err));
	print_message("%zu-frame sample -> exit %d: %s", (size_t)DEPTH, status, err);
	assert_int_equal(status, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crafted_deep_stack),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
