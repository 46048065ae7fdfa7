/*
 * fuzz_principal_map.c - ssl.principal.mapping.rules (sec/principal_map.c):
 * the bytes up to the first NUL are the rules, the rest the DN.  Rules
 * that parse are applied to the DN; DEFAULT alone must give the DN back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "sec/principal_map.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	struct principal_map *pm;
	char *rules, *dn, *name, err[256];

	fuzz_quiet();
	if (!nul)
		return 0;
	rules = strndup((const char *)data, (size_t)(nul - data));
	dn = strndup((const char *)nul + 1, size - (size_t)(nul - data) - 1);
	if (!rules || !dn)
		abort();
	if (!principal_map_new(rules, &pm, err, sizeof(err))) {
		name = principal_map_apply(pm, dn);
		free(name);
		principal_map_free(pm);
	}
	pm = NULL;
	if (principal_map_new("DEFAULT", &pm, err, sizeof(err)))
		abort();
	name = principal_map_apply(pm, dn);
	if (!name || strcmp(name, dn))
		abort();
	free(name);
	principal_map_free(pm);
	free(rules);
	free(dn);
	return 0;
}
