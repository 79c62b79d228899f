// SPDX-License-Identifier: MIT
#include "push/curl_lib.h"

#include "util/array.h"
#include "util/errbuf.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

/* The soname of Debian's libcurl4 (the one libcurl4-openssl-dev builds against). */
#define CURL_LIB_SONAME "libcurl.so.4"

struct curl_symbol {
	const char *name;
	size_t offset; /* of its pointer in struct curl_lib */
};

#define CURL_SYMBOL(field) { "curl_" #field, offsetof(struct curl_lib, field) }

static const struct curl_symbol curl_symbols[] = {
	CURL_SYMBOL(global_init),   CURL_SYMBOL(global_cleanup), CURL_SYMBOL(easy_init),
	CURL_SYMBOL(easy_cleanup),  CURL_SYMBOL(easy_setopt),    CURL_SYMBOL(easy_perform),
	CURL_SYMBOL(easy_getinfo),  CURL_SYMBOL(easy_strerror),  CURL_SYMBOL(easy_escape),
	CURL_SYMBOL(free),          CURL_SYMBOL(mime_init),      CURL_SYMBOL(mime_free),
	CURL_SYMBOL(mime_addpart),  CURL_SYMBOL(mime_name),      CURL_SYMBOL(mime_filename),
	CURL_SYMBOL(mime_type),     CURL_SYMBOL(mime_data),
};

int curl_lib_open(struct curl_lib *lib, char *error, size_t error_len)
{
	memset(lib, 0, sizeof(*lib));
	lib->handle = dlopen(CURL_LIB_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!lib->handle)
		return errbuf_format(error, error_len, -ENOENT, "pushing needs libcurl: %s", dlerror());
	for (size_t i = 0; i < ARRAY_SIZE(curl_symbols); i++) {
		void *function = dlsym(lib->handle, curl_symbols[i].name);

		if (!function) {
			curl_lib_close(lib);
			return errbuf_format(error, error_len, -ENOENT, "%s has no %s", CURL_LIB_SONAME,
					     curl_symbols[i].name);
		}
		/* POSIX guarantees a function pointer round-trips through dlsym's void *. */
		memcpy((char *)lib + curl_symbols[i].offset, &function, sizeof(function));
	}
	return 0;
}

void curl_lib_close(struct curl_lib *lib)
{
	if (lib->handle)
		dlclose(lib->handle);
	memset(lib, 0, sizeof(*lib));
}
