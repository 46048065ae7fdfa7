/*
 * principal_map.h - Kafka's ssl.principal.mapping.rules: how the subject
 * DN of a client certificate (RFC 2253, "CN=app1,O=example") becomes the
 * name of the connection's User principal.
 *
 *   RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,
 *   RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/L,
 *   DEFAULT
 *
 * Rules are tried in order; the first whose pattern matches the whole DN
 * gives the name: its replacement with $1..$9 standing for the groups,
 * then in lower case (L) or upper case (U).  DEFAULT gives the DN itself.
 * No rule matching refuses the certificate, as in Kafka.  Patterns are
 * POSIX extended regular expressions; Java's lazy quantifiers (*?, +?, ??)
 * are read as greedy ones and \d as [0-9], which gives Kafka's results on
 * DNs whose attribute values do not repeat the text the pattern looks for.
 */
#ifndef GREGOR_SEC_PRINCIPAL_MAP_H
#define GREGOR_SEC_PRINCIPAL_MAP_H

#include <stddef.h>

struct principal_map;

/*
 * Parses rules (NULL or blank: DEFAULT alone).  Returns 0 and *out, or
 * -EINVAL with a message naming the bad rule in err, or -ENOMEM.
 */
int principal_map_new(const char *rules, struct principal_map **out, char *err, size_t errlen);
void principal_map_free(struct principal_map *pm);

/* The principal name dn maps to, malloc()ed; NULL when no rule matches (or on ENOMEM). */
char *principal_map_apply(const struct principal_map *pm, const char *dn);

#endif
