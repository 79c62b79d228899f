// SPDX-License-Identifier: MIT
#include "parser/parser_protocol.h"

#include <errno.h>
#include <string.h>

static bool link_name_valid(const char *name)
{
	size_t len = strnlen(name, PARSER_MAX_LINK_NAME + 1);

	if (len > PARSER_MAX_LINK_NAME)
		return false;
	return !memchr(name, '/', len) && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

static bool functions_valid(const struct parser_function *functions, size_t count, size_t names_len)
{
	for (size_t i = 0; i < count; i++) {
		if (functions[i].name_offset >= names_len)
			return false;
		if (i && functions[i].addr < functions[i - 1].addr)
			return false;
	}
	return true;
}

int parser_symbols_check(const void *payload, size_t len, struct parser_symbols *out)
{
	const struct parser_symbols_head *head = payload;
	const char *at = payload;
	uint64_t expected;

	if (len < sizeof(*head))
		return -EBADMSG;
	if (head->segment_count > PARSER_MAX_SEGMENTS || head->build_id_len > PARSER_MAX_BUILD_ID ||
	    !link_name_valid(head->debuglink) || (head->has_debuglink && !head->debuglink[0]))
		return -EBADMSG;
	expected = sizeof(*head) + (uint64_t)head->segment_count * sizeof(struct parser_segment) +
		   (uint64_t)head->function_count * sizeof(struct parser_function) + head->names_len;
	if (expected != len)
		return -EBADMSG;
	out->head = head;
	out->segments = (const void *)(at + sizeof(*head));
	out->functions = (const void *)(out->segments + head->segment_count);
	out->names = (const char *)(out->functions + head->function_count);
	if (head->names_len && out->names[head->names_len - 1] != 0)
		return -EBADMSG;
	if (!functions_valid(out->functions, head->function_count, head->names_len))
		return -EBADMSG;
	return 0;
}

int parser_dynamic_check(const void *payload, size_t len, struct parser_dynamic_names *out)
{
	const struct parser_dynamic_head *head = payload;
	const char *names = (const char *)payload + sizeof(*head), *at;
	uint32_t strings = 0;

	if (len < sizeof(*head) || head->needed_count > PARSER_MAX_NEEDED ||
	    head->names_len != len - sizeof(*head) || !head->names_len || names[head->names_len - 1] != 0)
		return -EBADMSG;
	for (at = names; at < names + head->names_len; strings++) {
		size_t name_len = strlen(at);

		if (name_len >= PATH_MAX || (strings >= 2 && !name_len))
			return -EBADMSG;
		at += name_len + 1;
	}
	if (strings != 2 + head->needed_count)
		return -EBADMSG;
	out->rpath = names;
	out->runpath = names + strlen(names) + 1;
	out->needed = out->runpath + strlen(out->runpath) + 1;
	out->needed_count = head->needed_count;
	return 0;
}
