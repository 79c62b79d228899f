// SPDX-License-Identifier: MIT
#include "util/sudo_user.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

/* A decimal id with nothing around it; false for "", "-1", "12x" or out of range. */
static bool parse_id(const char *text, unsigned long *id)
{
	char *end;

	if (!text || *text < '0' || *text > '9')
		return false;
	errno = 0;
	*id = strtoul(text, &end, 10);
	return !errno && !*end && *id < (unsigned long)(uid_t)-1;
}

bool sudo_user_ids(uid_t *uid, gid_t *gid)
{
	unsigned long uid_value, gid_value;

	if (geteuid() != 0 || !parse_id(getenv("SUDO_UID"), &uid_value) ||
	    !parse_id(getenv("SUDO_GID"), &gid_value) || uid_value == 0)
		return false;
	*uid = (uid_t)uid_value;
	*gid = (gid_t)gid_value;
	return true;
}

bool sudo_user_present(void)
{
	return getenv("SUDO_UID") || getenv("SUDO_GID") || getenv("SUDO_USER") ||
	       getenv("SUDO_COMMAND");
}
