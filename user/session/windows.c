// SPDX-License-Identifier: MIT
#include "session/windows.h"

#include "formats/format_registry.h"
#include "session/session_internal.h"
#include "sampler/perf_events.h"
#include "util/clock.h"
#include "util/errbuf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* What is still queued at the end gets this long to be delivered. */
#define WINDOWS_FINAL_DEADLINE_MS 5000
/* A window's pprof is read back from memory: more than this is not a profile of one window. */
#define WINDOWS_MAX_BYTES (256u << 20)

struct windows {
	const struct session_options *options;
	struct push_client *client;
	const struct pf_format *format;
	int fd;                          /* a memfd the window's writer writes into */
	void *state;
	const struct pf_writer_ops *ops;
	uint64_t started_ms;             /* CLOCK_MONOTONIC, for the cut */
	time_t started_wall;             /* Unix time, for the endpoint */
	uint64_t samples;
	bool broken;                     /* a window could not be started: no more windows */
};

static void set_window_metadata(struct windows *windows)
{
	char text[32];

	windows->ops->set_metadata(windows->state, "mode", session_mode_name(windows->options->mode));
	snprintf(text, sizeof(text), "%u", 1000000u / windows->options->frequency_hz);
	windows->ops->set_metadata(windows->state, "interval", text);
	if (windows->options->event) {
		windows->ops->set_metadata(windows->state, "event", session_event_name(windows->options));
		snprintf(text, sizeof(text), "%" PRIu64, session_event_period(windows->options));
		windows->ops->set_metadata(windows->state, "event_period", text);
		windows->ops->set_metadata(windows->state, "event_unit",
					   perf_event_unit_name(session_event_unit(windows->options)));
	}
}

static int start_window(struct windows *windows)
{
	struct pf_writer_options options = PF_WRITER_OPTIONS_DEFAULT;
	int err;

	windows->fd = memfd_create("pybpfprof-window", MFD_CLOEXEC);
	if (windows->fd < 0)
		return -errno;
	err = windows->format->writer_create(windows->fd, &options, &windows->state, &windows->ops);
	if (err) {
		close(windows->fd);
		windows->fd = -1;
		return err;
	}
	set_window_metadata(windows);
	windows->started_ms = clock_monotonic_ms();
	windows->started_wall = time(NULL);
	windows->samples = 0;
	return 0;
}

/* The finished window's bytes (malloc'd), read back from its memfd. */
static int read_window(int fd, uint8_t **data, size_t *len)
{
	struct stat info;
	ssize_t got;

	if (fstat(fd, &info) != 0)
		return -errno;
	if ((uint64_t)info.st_size > WINDOWS_MAX_BYTES)
		return -E2BIG;
	*len = (size_t)info.st_size;
	*data = malloc(*len ? *len : 1);
	if (!*data)
		return -ENOMEM;
	got = pread(fd, *data, *len, 0);
	if (got < 0 || (size_t)got != *len) {
		free(*data);
		return got < 0 ? -errno : -EIO;
	}
	return 0;
}

/* Finishes the window and hands it to the client (an empty window is not sent). */
static void end_window(struct windows *windows)
{
	char text[32];
	uint8_t *data = NULL;
	size_t len = 0;
	int err;

	snprintf(text, sizeof(text), "%" PRIu64, (clock_monotonic_ms() - windows->started_ms) * 1000);
	windows->ops->set_metadata(windows->state, "duration", text);
	err = windows->ops->finish(windows->state);
	if (!err && windows->samples)
		err = read_window(windows->fd, &data, &len);
	windows->ops->destroy(windows->state);
	close(windows->fd);
	windows->fd = -1;
	if (!err && windows->samples)
		push_client_submit(windows->client, data, len, windows->started_wall, time(NULL));
}

void windows_add_sample(struct windows *windows, const struct pf_sample *sample)
{
	if (windows->broken || windows->fd < 0)
		return;
	if (windows->ops->add_sample(windows->state, sample) == 0)
		windows->samples++;
}

bool windows_due(const struct windows *windows, uint64_t now_ms)
{
	return !windows->broken && now_ms - windows->started_ms >= (uint64_t)(windows->options->window_s * 1000.0);
}

void windows_tick(struct windows *windows, uint64_t now_ms)
{
	if (!windows_due(windows, now_ms))
		return;
	end_window(windows);
	if (start_window(windows)) {
		report_error("warning: cannot start a new profile window: continuing without pushes");
		windows->broken = true;
	}
}

/* The application name and its labels as Pyroscope takes them: "app.cpu{host=h,k=v}". */
static void push_name(const struct session_options *options, char *out, size_t len)
{
	char host[256] = "unknown";
	size_t used;

	gethostname(host, sizeof(host) - 1);
	used = (size_t)snprintf(out, len, "%s.%s{host=%s", options->push_app ? options->push_app : "pybpfprof",
				session_mode_name(options->mode), host);
	for (size_t i = 0; i < options->push_label_count && used < len; i++)
		used += (size_t)snprintf(out + used, len - used, ",%s", options->push_labels[i]);
	if (used < len)
		snprintf(out + used, len - used, "}");
}

int windows_open(struct session *session)
{
	const struct session_options *options = session->options;
	struct windows *windows = calloc(1, sizeof(*windows));
	char name[1024], error[256] = "";
	int err;

	if (!windows)
		return -ENOMEM;
	windows->options = options;
	windows->fd = -1;
	windows->format = format_registry_find_name("pprof");
	push_name(options, name, sizeof(name));
	err = push_client_start(&windows->client, options->push_url, name, options->frequency_hz, options->quiet,
				error, sizeof(error));
	if (err) {
		report_error("%s", error);
		free(windows);
		return err;
	}
	err = start_window(windows);
	if (err) {
		struct push_client_stats ignored;

		report_error("cannot start a profile window: %s", strerror(-err));
		push_client_stop(windows->client, 0, &ignored);
		free(windows);
		return err;
	}
	session->windows = windows;
	return 0;
}

void windows_close(struct windows *windows, struct push_client_stats *stats)
{
	if (!windows->broken && windows->fd >= 0)
		end_window(windows);
	push_client_stop(windows->client, WINDOWS_FINAL_DEADLINE_MS, stats);
	free(windows);
}
