/*
 * fuzz_conf.c - server.properties parsing (util/conf.c through the
 * broker's table in broker/config.c): arbitrary text, then the
 * cross-setting checks, then every key formatted back.
 */
#include <stdint.h>

#include "broker/config.h"
#include "fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct conf_table *t = config_table();
	struct broker_cfg cfg;
	char err[256], buf[512];

	fuzz_quiet();
	if (config_init(&cfg) < 0)
		return 0;
	conf_load_text(t, &cfg, (const char *)data, size, "fuzz.properties", err, sizeof(err));
	config_finalize(&cfg, err, sizeof(err));
	for (size_t i = 0; i < t->ndefs; i++)
		config_get(&cfg, t->defs[i].name, buf, sizeof(buf), NULL);
	config_release(&cfg);
	log_debug_mask = 0; /* log.debug may have turned categories on */
	return 0;
}
