/* SPDX-License-Identifier: MIT */
/*
 * Continuous mode: the recording cut into windows (--window), each window a
 * pprof profile built in memory and handed to the push client (--push). The
 * outputs given with -o still get the whole run.
 */
#ifndef PYBPFPROF_WINDOWS_H
#define PYBPFPROF_WINDOWS_H

#include <stdbool.h>
#include <stdint.h>

#include "profile/profile.h"
#include "push/push_client.h"

struct session;
struct windows;

/* Starts the push client and the first window. 0 or a negative errno (reported). */
int windows_open(struct session *session);
void windows_add_sample(struct windows *windows, const struct pf_sample *sample);
/* Cuts the window when its time is up. */
/* Whether the window in progress has lasted its length (windows_tick would start another). */
bool windows_due(const struct windows *windows, uint64_t now_ms);
void windows_tick(struct windows *windows, uint64_t now_ms);
/* Cuts the last (partial) window, delivers what it can within a deadline, frees everything. */
void windows_close(struct windows *windows, struct push_client_stats *stats);

#endif
