// SPDX-License-Identifier: MIT
#include "sampler/kernel_names.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sample_record.h"

/* One line per address: 16 hex digits, a space, the kernel's symbol (KSYM_NAME_LEN 512 at
 * most), " [module]" (MODULE_NAME_LEN 56), a newline; rounded up. */
#define LINE_MAX_BYTES 640u
#define TEXT_BYTES (PBP_KSYM_PASS * LINE_MAX_BYTES)

struct kernel_names {
	int link;            /* the iterator's BPF link */
	uint64_t *slots;     /* the map's PBP_KSYM_BATCH values, mapped read-write */
	size_t slots_used;   /* filled by the last lookup: cleared by the next */
	char text[TEXT_BYTES + 1];
};

int kernel_names_open(struct kernel_names **out, int names_prog, int addresses)
{
	/* The iterator prints once, for the first thread of the profiler's own process. */
	union bpf_iter_link_info link_info = { .task = { .pid = (__u32)getpid() } };
	DECLARE_LIBBPF_OPTS(bpf_link_create_opts, opts, .iter_info = &link_info, .iter_info_len = sizeof(link_info));
	struct kernel_names *names = calloc(1, sizeof(*names));
	int err;

	*out = NULL;
	if (!names)
		return -ENOMEM;
	names->link = -1;
	names->slots = mmap(NULL, PBP_KSYM_BATCH * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, addresses, 0);
	if (names->slots == MAP_FAILED) {
		err = -errno;
		free(names);
		return err;
	}
	names->link = bpf_link_create(names_prog, 0, BPF_TRACE_ITER, &opts);
	if (names->link < 0) {
		err = -errno;
		kernel_names_close(names);
		return err;
	}
	*out = names;
	return 0;
}

/* Runs the iterator once and reads all it prints into names->text; its length. */
static ssize_t read_pass(struct kernel_names *names)
{
	int fd = bpf_iter_create(names->link);
	size_t length = 0;
	ssize_t got = 0;

	if (fd < 0)
		return -errno;
	while (length < TEXT_BYTES && (got = read(fd, names->text + length, TEXT_BYTES - length)) > 0)
		length += (size_t)got;
	if (got < 0)
		got = -errno;
	close(fd);
	if (got < 0)
		return got;
	names->text[length] = '\0';
	return (ssize_t)length;
}

/* "address name" lines: found() for each with a name (the kernel prints "0x..." for none). */
static void parse_lines(char *text, kernel_name_fn found, void *context)
{
	char *line = text, *end;

	for (; *line; line = end + 1) {
		char *name;
		uint64_t address;

		end = strchr(line, '\n');
		if (!end)
			return; /* a last line cut short by a full buffer */
		*end = '\0';
		errno = 0;
		address = strtoull(line, &name, 16);
		if (errno || name == line || *name != ' ')
			continue;
		name++;
		if (*name && strncmp(name, "0x", 2) != 0)
			found(context, address, name);
	}
}

/* One pass: names up to PBP_KSYM_PASS addresses. */
static int lookup_pass(struct kernel_names *names, const uint64_t *addresses, size_t count, kernel_name_fn found,
		       void *context)
{
	ssize_t length;

	memcpy(names->slots, addresses, count * sizeof(*addresses));
	if (names->slots_used > count)
		memset(names->slots + count, 0, (names->slots_used - count) * sizeof(*addresses));
	names->slots_used = count;
	length = read_pass(names);
	if (length < 0)
		return (int)length;
	parse_lines(names->text, found, context);
	return 0;
}

int kernel_names_lookup(struct kernel_names *names, const uint64_t *addresses, size_t count, kernel_name_fn found,
			void *context)
{
	int err = 0;

	if (count > PBP_KSYM_BATCH)
		return -E2BIG;
	for (size_t done = 0; done < count && !err; done += PBP_KSYM_PASS)
		err = lookup_pass(names, addresses + done, count - done < PBP_KSYM_PASS ? count - done : PBP_KSYM_PASS,
				  found, context);
	return err;
}

void kernel_names_close(struct kernel_names *names)
{
	if (!names)
		return;
	if (names->link >= 0)
		close(names->link);
	if (names->slots && names->slots != MAP_FAILED)
		munmap(names->slots, PBP_KSYM_BATCH * sizeof(uint64_t));
	free(names);
}
