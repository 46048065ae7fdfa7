/*
 * principal_map.c - ssl.principal.mapping.rules (see principal_map.h):
 * the rule parser, the translation of a Java pattern into a POSIX one and
 * the replacement of $n groups.
 */
#include "sec/principal_map.h"

#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PM_MAX_RULES 64
#define PM_GROUPS 10
#define PM_PATTERN_MAX 512

struct pm_rule {
	bool is_default;
	char case_to; /* 'L', 'U' or 0 */
	regex_t re;
	char *replacement; /* as written, escapes kept */
};

struct principal_map {
	int n;
	struct pm_rule rules[PM_MAX_RULES];
};

/* The end of a /-terminated field starting at p (a backslash escapes the next character), or NULL. */
static const char *pm_field_end(const char *p)
{
	for (; *p && *p != '/'; p++)
		if (*p == '\\' && p[1])
			p++;
	return *p == '/' ? p : NULL;
}

/*
 * The POSIX form of the Java pattern from..to, malloc()ed: \/ becomes /,
 * \d and \D [0-9] and [^0-9], and the ? making a quantifier lazy goes.
 */
static char *pm_posix(const char *from, const char *to)
{
	char *out = malloc((size_t)(to - from) * 6 + 1), *o = out;
	bool in_set = false;

	if (!out)
		return NULL;
	for (const char *p = from; p < to; p++) {
		if (*p == '\\' && p + 1 < to) {
			p++;
			if (*p == '/')
				*o++ = '/';
			else if ((*p == 'd' || *p == 'D') && !in_set)
				o += sprintf(o, *p == 'd' ? "[0-9]" : "[^0-9]");
			else
				o += sprintf(o, "\\%c", *p);
			continue;
		}
		if (in_set && *p == ']')
			in_set = false;
		else if (!in_set && *p == '[')
			in_set = true;
		else if (!in_set && *p == '?' && p > from && strchr("*+?}", p[-1]) && (p - 1 == from || p[-2] != '\\'))
			continue;
		*o++ = *p;
	}
	*o = '\0';
	return out;
}

/* The end of the bracket expression starting at p ('['), past its ']'. */
static const char *pm_set_end(const char *p)
{
	p++;
	if (*p == '^')
		p++;
	if (*p == ']')
		p++;
	while (*p && *p != ']')
		p++;
	return *p ? p + 1 : p;
}

/*
 * Why the POSIX pattern re is refused, or NULL: what makes glibc's
 * compiler take time or memory without bound (a quantifier on a
 * quantifier, large or nested {m,n} bounds, very long patterns).
 */
static const char *pm_pattern_why(const char *re)
{
	bool after_quant = false;
	int bounds = 0;

	if (strlen(re) > PM_PATTERN_MAX)
		return "longer than 512 characters";
	for (const char *p = re; *p;) {
		bool quant = *p == '*' || *p == '+' || *p == '?' || *p == '{';

		if (quant && after_quant)
			return "a quantifier on a quantifier (possessive or stacked quantifiers)";
		if (*p == '{') {
			char *end;
			long lo = strtol(p + 1, &end, 10), hi = *end == ',' ? strtol(end + 1, &end, 10) : lo;

			if (++bounds > 1 || lo > 100 || hi > 100 || *end != '}')
				return "more than one {m,n} bound, or one above 100";
			p = end + 1;
		} else if (*p == '[') {
			p = pm_set_end(p);
		} else {
			p += *p == '\\' && p[1] ? 2 : 1;
		}
		after_quant = quant;
	}
	return NULL;
}

/* One RULE:pattern/replacement/[LU] at *pp into r; advances *pp.  0 or -EINVAL with err. */
static int pm_parse_rule(const char **pp, struct pm_rule *r, char *err, size_t errlen)
{
	const char *start = *pp, *pat = start + 5, *pat_end = pm_field_end(pat), *rep_end;
	char *posix;
	int rc;

	rep_end = pat_end ? pm_field_end(pat_end + 1) : NULL;
	if (!rep_end) {
		snprintf(err, errlen, "ssl.principal.mapping.rules: '%.40s' is not RULE:pattern/replacement/[LU]",
			 start);
		return -EINVAL;
	}
	posix = pm_posix(pat, pat_end);
	r->replacement = strndup(pat_end + 1, (size_t)(rep_end - pat_end - 1));
	if (!posix || !r->replacement) {
		free(posix);
		return -ENOMEM;
	}
	if (pm_pattern_why(posix)) {
		snprintf(err, errlen, "ssl.principal.mapping.rules: pattern '%.*s' refused: %s", (int)(pat_end - pat),
			 pat, pm_pattern_why(posix));
		free(posix);
		free(r->replacement);
		r->replacement = NULL;
		return -EINVAL;
	}
	rc = regcomp(&r->re, posix, REG_EXTENDED);
	free(posix);
	if (rc) {
		char why[128];

		regerror(rc, &r->re, why, sizeof(why));
		snprintf(err, errlen, "ssl.principal.mapping.rules: bad pattern '%.*s': %s", (int)(pat_end - pat), pat,
			 why);
		free(r->replacement);
		r->replacement = NULL;
		return -EINVAL;
	}
	*pp = rep_end + 1;
	if (**pp == 'L' || **pp == 'U')
		r->case_to = *(*pp)++;
	return 0;
}

/* Parses the next rule at *pp into pm; 0, or -EINVAL / -ENOMEM with err. */
static int pm_parse_next(struct principal_map *pm, const char **pp, char *err, size_t errlen)
{
	struct pm_rule *r = &pm->rules[pm->n];
	bool newline = false; /* rules one a line need no comma */
	int rc;

	if (pm->n == PM_MAX_RULES) {
		snprintf(err, errlen, "ssl.principal.mapping.rules: more than %d rules", PM_MAX_RULES);
		return -EINVAL;
	}
	memset(r, 0, sizeof(*r));
	if (!strncmp(*pp, "DEFAULT", 7)) {
		r->is_default = true;
		*pp += 7;
	} else if (!strncmp(*pp, "RULE:", 5)) {
		rc = pm_parse_rule(pp, r, err, errlen);
		if (rc)
			return rc;
	} else {
		snprintf(err, errlen, "ssl.principal.mapping.rules: '%.40s' is neither DEFAULT nor RULE:...", *pp);
		return -EINVAL;
	}
	pm->n++;
	while (isspace((unsigned char)**pp))
		newline |= *(*pp)++ == '\n';
	if (**pp == ',')
		(*pp)++;
	else if (**pp && !newline) {
		snprintf(err, errlen, "ssl.principal.mapping.rules: unexpected '%.40s' after a rule", *pp);
		return -EINVAL;
	}
	return 0;
}

int principal_map_new(const char *rules, struct principal_map **out, char *err, size_t errlen)
{
	struct principal_map *pm = calloc(1, sizeof(*pm));
	const char *p = rules ? rules : "";
	int rc = 0;

	if (!pm)
		return -ENOMEM;
	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		rc = pm_parse_next(pm, &p, err, errlen);
		if (rc) {
			principal_map_free(pm);
			return rc;
		}
	}
	if (!pm->n)
		pm->rules[pm->n++].is_default = true;
	*out = pm;
	return 0;
}

void principal_map_free(struct principal_map *pm)
{
	if (!pm)
		return;
	for (int i = 0; i < pm->n; i++) {
		if (pm->rules[i].is_default)
			continue;
		regfree(&pm->rules[i].re);
		free(pm->rules[i].replacement);
	}
	free(pm);
}

/* The replacement of rule r for dn with groups m, malloc()ed: $n is group n (if the pattern has it), \x is x. */
static char *pm_replace(const struct pm_rule *r, const char *dn, const regmatch_t *m)
{
	size_t cap = strlen(r->replacement) + 1, len = 0;
	char *out;

	for (const char *p = r->replacement; *p; p++)
		if (*p == '$')
			cap += strlen(dn);
	out = malloc(cap);
	if (!out)
		return NULL;
	for (const char *p = r->replacement; *p; p++) {
		size_t g = p[0] == '$' && isdigit((unsigned char)p[1]) ? (size_t)(p[1] - '0') : PM_GROUPS;

		if (g < PM_GROUPS && g <= r->re.re_nsub) {
			if (m[g].rm_so >= 0) {
				memcpy(out + len, dn + m[g].rm_so, (size_t)(m[g].rm_eo - m[g].rm_so));
				len += (size_t)(m[g].rm_eo - m[g].rm_so);
			}
			p++;
			continue;
		}
		if (p[0] == '\\' && p[1])
			p++;
		out[len++] = *p;
	}
	out[len] = '\0';
	for (char *c = out; r->case_to && *c; c++)
		*c = (char)(r->case_to == 'L' ? tolower((unsigned char)*c) : toupper((unsigned char)*c));
	return out;
}

char *principal_map_apply(const struct principal_map *pm, const char *dn)
{
	regmatch_t m[PM_GROUPS];

	for (int i = 0; i < pm->n; i++) {
		const struct pm_rule *r = &pm->rules[i];

		if (r->is_default)
			return strdup(dn);
		if (regexec(&r->re, dn, PM_GROUPS, m, 0) || m[0].rm_so != 0 || (size_t)m[0].rm_eo != strlen(dn))
			continue;
		return pm_replace(r, dn, m);
	}
	return NULL;
}
