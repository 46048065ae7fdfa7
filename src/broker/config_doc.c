/*
 * config_doc.c - docs/configuration.md from the broker and topic setting
 * tables (`gregor --print-config-doc`).  Apart from config.c so that the
 * broker settings do not reach into the topic settings, which follow them.
 */
#include "broker/config.h"

#include <errno.h>
#include <stdio.h>

#include "broker/topic_config.h"
#include "util/conf.h"

int config_write_doc(FILE *f)
{
	int rc;

	fputs("# Configuration\n\n"
	      "<!-- Generated from src/broker/config.c and src/broker/topic_config.c by\n"
	      "     `gregor --print-config-doc > docs/configuration.md`; do not edit by hand. -->\n\n"
	      "Gregor reads a Kafka-style `server.properties` file: `key=value` (or `key: value`) lines,\n"
	      "`#` or `!` comments, a trailing `\\` continues a line. Keys are Kafka's. An unknown key or a\n"
	      "bad value stops start-up with the file and line:\n\n"
	      "    config/server.properties:12: unknown setting 'foo.bar'\n\n"
	      "Command line: `gregor [server.properties] [--override key=value ...]`; overrides win over\n"
	      "the file. Integers are plain numbers without units, as in Kafka.\n\n"
	      "Settings marked \"Accepted, no effect on a single node\" are read so that a stock Kafka\n"
	      "`server.properties` loads unchanged; they will matter in cluster mode or never.\n"
	      "\"Dynamic\" marks settings meant to be changeable while the broker runs (as in Kafka);\n"
	      "topic settings change through the admin APIs, dynamic broker settings are re-read from\n"
	      "`server.properties` on SIGHUP (docs/operations.md).\n\n"
	      "## Broker settings\n\n",
	      f);
	rc = conf_write_doc(config_table(), f);
	fputs("\n## Topic settings\n\n"
	      "Set per topic with CreateTopics, AlterConfigs or IncrementalAlterConfigs (for example\n"
	      "`kafka-configs --alter --entity-type topics --entity-name T --add-config retention.ms=60000`).\n"
	      "A topic setting that is not set follows the broker setting named in its description;\n"
	      "the defaults shown are those of a broker with default settings. DescribeConfigs reports\n"
	      "the source of each value: DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG or DEFAULT_CONFIG.\n\n",
	      f);
	if (!rc)
		rc = topic_cfg_write_doc(f);
	return rc || ferror(f) ? -EIO : 0;
}
