/* SPDX-License-Identifier: MIT */
/*
 * The user who ran us through sudo (SUDO_UID, SUDO_GID): files we create belong
 * to them and a launched command runs as them, as `sudo -u` would.
 */
#ifndef PYBPFPROF_SUDO_USER_H
#define PYBPFPROF_SUDO_USER_H

#include <stdbool.h>
#include <sys/types.h>

/* True when we run as root and SUDO_UID and SUDO_GID name a user other than root. */
bool sudo_user_ids(uid_t *uid, gid_t *gid);
/* True when any sudo variable says so (SUDO_UID, SUDO_GID, SUDO_USER, SUDO_COMMAND). */
bool sudo_user_present(void);

#endif
