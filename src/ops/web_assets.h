/*
 * web_assets.h - the web console's files (the web folder), built into the binary
 * by mk/embed.py as build/gen/web_assets.c, so the broker serves them
 * from any working directory and reads nothing from the file system.
 */
#ifndef GREGOR_OPS_WEB_ASSETS_H
#define GREGOR_OPS_WEB_ASSETS_H

#include <stddef.h>

struct web_asset {
	const char *path; /* "/index.html", "/console.js", ... */
	const char *type; /* its Content-Type */
	const unsigned char *data;
	size_t len;
};

extern const struct web_asset web_assets[];
extern const size_t web_assets_count;

#endif
