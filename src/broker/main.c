/*
 * main.c - the gregor broker executable:
 *   gregor [--help] [--version] [server.properties] [--override key=value ...]
 *
 * The program wires the layers together, so it alone reaches above broker/:
 * the operations HTTP listener (ops/) starts before the log dirs are
 * loaded, so /health/live answers and /health/ready says 503 meanwhile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/broker.h"
#include "broker/config.h"
#include "broker/server.h"
#include "ops/http.h"
#include "util/log.h"

int main(int argc, char **argv)
{
	static struct broker b;
	struct http *http = NULL;
	const char *path = NULL;
	int rc = config_parse_args(argc, argv, &b.cfg, &path);

	if (rc == CONFIG_ARGS_PRINT_DOC)
		return config_write_doc(stdout) ? 1 : 0;
	if (rc != CONFIG_ARGS_RUN)
		return rc;
	if (b.cfg.log_debug && b.cfg.log_debug[0] && log_set_debug(b.cfg.log_debug) < 0) {
		fprintf(stderr,
			"gregor: log.debug: unknown category in '%s' (net,proto,log,group,txn,broker,cluster,all)\n",
			b.cfg.log_debug);
		return 2;
	}
	b.config_path = path;
	b.argc = argc;
	b.argv = argv;
	log_info("gregor %s starting (config %s)", GREGOR_VERSION, path ? path : "defaults");
	config_report_unused(&b.cfg);
	if (http_start(b.cfg.metrics_listener, b.cfg.console_write_enable, &http) < 0 || server_start(&b) < 0) {
		log_error("start-up failed");
		http_stop(http);
		return b.exit_code ? b.exit_code : 1;
	}
	server_run(&b);
	server_stop(&b);
	http_stop(http);
	config_release(&b.cfg);
	return b.exit_code; /* 2: the cluster refused this broker (logged) */
}
