/* SPDX-License-Identifier: MIT */
/*
 * Delivering profile windows to a Pyroscope-compatible ingest endpoint
 * (POST URL/ingest?name=...&from=...&until=...&format=pprof, the pprof in a
 * multipart "profile" field) on a thread of its own: submitting never blocks
 * sampling, a failed push is retried with backoff, and a queue that fills up
 * (the endpoint down for long) drops its oldest windows, counted.
 */
#ifndef PYBPFPROF_PUSH_CLIENT_H
#define PYBPFPROF_PUSH_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Windows waiting at most; past it the oldest is dropped. */
#define PUSH_CLIENT_QUEUE_MAX 16
/* Backoff after a failed push: doubling from the first to the last. */
#define PUSH_CLIENT_BACKOFF_FIRST_MS 500
#define PUSH_CLIENT_BACKOFF_MAX_MS 30000

struct push_client_stats {
	uint64_t submitted;
	uint64_t delivered;
	uint64_t failed_attempts;
	uint64_t dropped;      /* pushed out of a full queue, or left undelivered at the end */
};

struct push_client;

/*
 * url: the endpoint's base ("http://host:4040"); name: the application name with
 * its labels ("app.cpu{host=h,k=v}"); rate_hz: the sampling rate; quiet: no
 * warnings on stderr. 0, or a negative errno with a line in error.
 */
int push_client_start(struct push_client **out, const char *url, const char *name, unsigned rate_hz, int quiet,
		      char *error, size_t error_len);
/* Queues one window [from, until) (Unix seconds); the client owns data (malloc'd) from now. */
void push_client_submit(struct push_client *client, uint8_t *data, size_t len, time_t from, time_t until);
/* Tries to deliver what is queued for at most deadline_ms, then stops, frees everything and
 * says how it went. */
void push_client_stop(struct push_client *client, unsigned deadline_ms, struct push_client_stats *stats);

#endif
