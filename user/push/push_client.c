// SPDX-License-Identifier: MIT
#include "push/push_client.h"

#include "push/curl_lib.h"

#include "util/clock.h"
#include "util/errbuf.h"
#include "util/text_quote.h"
#include "util/thread.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One request's bounds: a slow endpoint delays later windows, never sampling. */
#define PUSH_CONNECT_TIMEOUT_MS 3000
#define PUSH_TIMEOUT_MS 10000
#define PUSH_URL_MAX 4096
/* What is read of a reply: the endpoint's words are kept only for a failure's message, and a
 * reply past this is cut off rather than received (a hostile endpoint could send gigabytes). */
#define PUSH_REPLY_MAX (64 * 1024)
#define PUSH_REPLY_EXCERPT 160

struct push_window {
	uint8_t *data;
	size_t len;
	time_t from;
	time_t until;
};

struct push_client {
	struct curl_lib curl;
	char *url;
	char *name;
	unsigned rate_hz;
	int quiet;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct push_window queue[PUSH_CLIENT_QUEUE_MAX]; /* a ring: head, then count */
	size_t head;
	size_t count;
	bool stopping;
	uint64_t stop_by_ms;      /* when stopping: give up on what is left after this */
	unsigned failure_streak;  /* failed attempts since the last delivery */
	struct push_client_stats stats;
};

static void window_free(struct push_window *window)
{
	free(window->data);
	*window = (struct push_window){ 0 };
}

/* The ingest URL of one window; false if it does not fit. */
static bool ingest_url(const struct push_client *client, CURL *curl, const struct push_window *window, char *out,
		       size_t len)
{
	char *name = client->curl.easy_escape(curl, client->name, 0);
	int used;

	if (!name)
		return false;
	used = snprintf(out, len,
			"%s/ingest?name=%s&from=%lld&until=%lld&format=pprof&sampleRate=%u&spyName=pybpfprof",
			client->url, name, (long long)window->from, (long long)window->until, client->rate_hz);
	client->curl.free(name);
	return used > 0 && (size_t)used < len;
}

/* The reply body as it arrives: never written anywhere, its start kept for an error message. */
struct push_reply {
	char excerpt[PUSH_REPLY_EXCERPT + 1];
	size_t excerpt_len;
	size_t received;
	bool cut_off; /* longer than PUSH_REPLY_MAX: the transfer was stopped */
};

static size_t push_reply_receive(char *data, size_t size, size_t count, void *opaque)
{
	struct push_reply *reply = opaque;
	size_t len = size * count, keep = PUSH_REPLY_EXCERPT - reply->excerpt_len;

	if (len > PUSH_REPLY_MAX - reply->received) {
		reply->cut_off = true;
		return 0; /* libcurl stops the transfer: CURLE_WRITE_ERROR */
	}
	reply->received += len;
	if (keep > len)
		keep = len;
	memcpy(reply->excerpt + reply->excerpt_len, data, keep);
	reply->excerpt_len += keep;
	reply->excerpt[reply->excerpt_len] = 0;
	return len;
}

/* One POST of window; 0, or a negative errno with the reason in reason. */
static int post_window(const struct push_client *client, const struct push_window *window, char *reason,
		       size_t reason_len)
{
	CURL *curl = client->curl.easy_init();
	curl_mime *mime = NULL;
	curl_mimepart *part;
	char url[PUSH_URL_MAX], said[PUSH_REPLY_EXCERPT * 4 + 1];
	struct push_reply reply = { .received = 0 };
	long status = 0;
	CURLcode result;

	if (!curl)
		return errbuf_format(reason, reason_len, -ENOMEM, "cannot start a request");
	if (!ingest_url(client, curl, window, url, sizeof(url))) {
		client->curl.easy_cleanup(curl);
		return errbuf_format(reason, reason_len, -E2BIG, "the ingest URL is too long");
	}
	mime = client->curl.mime_init(curl);
	part = mime ? client->curl.mime_addpart(mime) : NULL;
	if (!part || client->curl.mime_name(part, "profile") != CURLE_OK ||
	    client->curl.mime_filename(part, "profile.pprof") != CURLE_OK ||
	    client->curl.mime_type(part, "application/octet-stream") != CURLE_OK ||
	    client->curl.mime_data(part, (const char *)window->data, window->len) != CURLE_OK) {
		client->curl.mime_free(mime);
		client->curl.easy_cleanup(curl);
		return errbuf_format(reason, reason_len, -ENOMEM, "cannot build the request");
	}
	client->curl.easy_setopt(curl, CURLOPT_URL, url);
	client->curl.easy_setopt(curl, CURLOPT_MIMEPOST, mime);
	/* Plain HTTP(S) only, no redirects: root sends profiles where it was told, nowhere else. */
	client->curl.easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	client->curl.easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
	client->curl.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	client->curl.easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)PUSH_CONNECT_TIMEOUT_MS);
	client->curl.easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)PUSH_TIMEOUT_MS);
	client->curl.easy_setopt(curl, CURLOPT_USERAGENT, "pybpfprof");
	/* Without a write function libcurl writes the reply to stdout, raw. */
	client->curl.easy_setopt(curl, CURLOPT_WRITEFUNCTION, push_reply_receive);
	client->curl.easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
	result = client->curl.easy_perform(curl);
	/* A reply cut off for its length still carried its status: a 2xx delivered the window. */
	if (result == CURLE_OK || (result == CURLE_WRITE_ERROR && reply.cut_off))
		client->curl.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	client->curl.mime_free(mime);
	client->curl.easy_cleanup(curl);
	if (result != CURLE_OK && !(result == CURLE_WRITE_ERROR && reply.cut_off))
		return errbuf_format(reason, reason_len, -EIO, "%s", client->curl.easy_strerror(result));
	if (status < 200 || status > 299)
		return errbuf_format(reason, reason_len, -EPROTO, "HTTP status %ld%s%s%s", status,
				     reply.excerpt_len ? " (\"" : "",
				     text_escaped(said, sizeof(said), reply.excerpt),
				     reply.excerpt_len ? "\")" : "");
	return 0;
}

/* Logs a failure once per streak, and the end of a streak. Called with the lock held. */
static void note_result(struct push_client *client, int err, const char *reason)
{
	if (err) {
		client->stats.failed_attempts++;
		if (client->failure_streak++ == 0 && !client->quiet) {
			fprintf(stderr, "pybpfprof: push to ");
			fput_escaped(stderr, client->url);
			fprintf(stderr, " failed: %s; retrying, sampling goes on\n", reason);
		}
		return;
	}
	if (client->failure_streak && !client->quiet)
		fprintf(stderr, "pybpfprof: push delivered again after %u failed attempts\n", client->failure_streak);
	client->failure_streak = 0;
	client->stats.delivered++;
	window_free(&client->queue[client->head]);
	client->head = (client->head + 1) % PUSH_CLIENT_QUEUE_MAX;
	client->count--;
}

static unsigned backoff_ms(unsigned streak)
{
	unsigned delay = PUSH_CLIENT_BACKOFF_FIRST_MS;

	for (unsigned i = 1; i < streak && delay < PUSH_CLIENT_BACKOFF_MAX_MS; i++)
		delay *= 2;
	return delay < PUSH_CLIENT_BACKOFF_MAX_MS ? delay : PUSH_CLIENT_BACKOFF_MAX_MS;
}

/* Waits until woken or ms have passed. Called with the lock held. */
static void wait_ms(struct push_client *client, unsigned ms)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&client->changed, &client->lock, &until);
}

static void *push_thread(void *opaque)
{
	struct push_client *client = opaque;

	pthread_mutex_lock(&client->lock);
	for (;;) {
		struct push_window window;
		char reason[256] = "";
		int err;

		while (!client->stopping && client->count == 0)
			pthread_cond_wait(&client->changed, &client->lock);
		if (client->count == 0 || (client->stopping && clock_monotonic_ms() >= client->stop_by_ms))
			break;
		window = client->queue[client->head];
		/* The data stays owned by the queue; only the head is ever freed, by this thread. */
		pthread_mutex_unlock(&client->lock);
		err = post_window(client, &window, reason, sizeof(reason));
		pthread_mutex_lock(&client->lock);
		note_result(client, err, reason);
		if (err) {
			unsigned delay = backoff_ms(client->failure_streak);
			uint64_t now = clock_monotonic_ms();

			/* Stopping: retry until the deadline, never sleep past it. */
			if (client->stopping && now >= client->stop_by_ms)
				break;
			if (client->stopping && client->stop_by_ms - now < delay)
				delay = (unsigned)(client->stop_by_ms - now);
			wait_ms(client, delay);
		}
	}
	pthread_mutex_unlock(&client->lock);
	return NULL;
}

int push_client_start(struct push_client **out, const char *url, const char *name, unsigned rate_hz, int quiet,
		      char *error, size_t error_len)
{
	struct push_client *client = calloc(1, sizeof(*client));
	size_t url_len = strlen(url);
	int err;

	if (!client)
		return errbuf_format(error, error_len, -ENOMEM, "out of memory");
	if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
		free(client);
		return errbuf_format(error, error_len, -EINVAL, "push URL must start with http:// or https://");
	}
	while (url_len && url[url_len - 1] == '/')
		url_len--;
	err = curl_lib_open(&client->curl, error, error_len);
	if (err) {
		free(client);
		return err;
	}
	client->url = strndup(url, url_len);
	client->name = strdup(name);
	client->rate_hz = rate_hz;
	client->quiet = quiet;
	if (!client->url || !client->name || client->curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		curl_lib_close(&client->curl);
		free(client->url);
		free(client->name);
		free(client);
		return errbuf_format(error, error_len, -ENOMEM, "cannot start the HTTP client");
	}
	pthread_mutex_init(&client->lock, NULL);
	pthread_cond_init(&client->changed, NULL);
	err = thread_start_without_signals(&client->thread, push_thread, client);
	if (err) {
		client->curl.global_cleanup();
		curl_lib_close(&client->curl);
		free(client->url);
		free(client->name);
		free(client);
		return errbuf_format(error, error_len, err, "cannot start the push thread: %s", strerror(-err));
	}
	*out = client;
	return 0;
}

void push_client_submit(struct push_client *client, uint8_t *data, size_t len, time_t from, time_t until)
{
	pthread_mutex_lock(&client->lock);
	client->stats.submitted++;
	if (client->count == PUSH_CLIENT_QUEUE_MAX) {
		/* The head may be in flight: drop the one after it, the oldest not being sent. */
		size_t victim = (client->head + 1) % PUSH_CLIENT_QUEUE_MAX;

		window_free(&client->queue[victim]);
		for (size_t i = 1; i + 1 < client->count; i++)
			client->queue[(client->head + i) % PUSH_CLIENT_QUEUE_MAX] =
				client->queue[(client->head + i + 1) % PUSH_CLIENT_QUEUE_MAX];
		client->count--;
		client->stats.dropped++;
	}
	client->queue[(client->head + client->count) % PUSH_CLIENT_QUEUE_MAX] =
		(struct push_window){ .data = data, .len = len, .from = from, .until = until };
	client->count++;
	pthread_cond_signal(&client->changed);
	pthread_mutex_unlock(&client->lock);
}

void push_client_stop(struct push_client *client, unsigned deadline_ms, struct push_client_stats *stats)
{
	pthread_mutex_lock(&client->lock);
	client->stopping = true;
	client->stop_by_ms = clock_monotonic_ms() + deadline_ms;
	pthread_cond_signal(&client->changed);
	pthread_mutex_unlock(&client->lock);
	pthread_join(client->thread, NULL);
	client->stats.dropped += client->count;
	while (client->count) {
		window_free(&client->queue[client->head]);
		client->head = (client->head + 1) % PUSH_CLIENT_QUEUE_MAX;
		client->count--;
	}
	*stats = client->stats;
	pthread_mutex_destroy(&client->lock);
	pthread_cond_destroy(&client->changed);
	client->curl.global_cleanup();
	curl_lib_close(&client->curl);
	free(client->url);
	free(client->name);
	free(client);
}
