/* SPDX-License-Identifier: MIT */
/*
 * libcurl, loaded when a run pushes (--push) and not before: linked in, it
 * and the 28 libraries it pulls in (TLS, Kerberos, LDAP...) would be mapped
 * into every run, some 4 MB of the profiler's resident memory and most of its
 * dynamic-loader time, for a feature most runs do not use.
 */
#ifndef PYBPFPROF_PUSH_CURL_LIB_H
#define PYBPFPROF_PUSH_CURL_LIB_H

#include <curl/curl.h>
#include <stddef.h>

/* The functions push_client.c calls, by their libcurl names without the curl_ prefix. */
struct curl_lib {
	void *handle;
	CURLcode (*global_init)(long flags);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *curl);
	CURLcode (*easy_setopt)(CURL *curl, CURLoption option, ...);
	CURLcode (*easy_perform)(CURL *curl);
	CURLcode (*easy_getinfo)(CURL *curl, CURLINFO info, ...);
	const char *(*easy_strerror)(CURLcode code);
	char *(*easy_escape)(CURL *curl, const char *string, int length);
	void (*free)(void *pointer);
	curl_mime *(*mime_init)(CURL *curl);
	void (*mime_free)(curl_mime *mime);
	curl_mimepart *(*mime_addpart)(curl_mime *mime);
	CURLcode (*mime_name)(curl_mimepart *part, const char *name);
	CURLcode (*mime_filename)(curl_mimepart *part, const char *filename);
	CURLcode (*mime_type)(curl_mimepart *part, const char *mimetype);
	CURLcode (*mime_data)(curl_mimepart *part, const char *data, size_t datasize);
};

/* Loads libcurl and finds every function; 0, or -ENOENT with the reason in error. */
int curl_lib_open(struct curl_lib *lib, char *error, size_t error_len);
void curl_lib_close(struct curl_lib *lib);

#endif
