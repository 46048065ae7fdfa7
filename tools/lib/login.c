/* login.c - SASL PLAIN and SCRAM client (login.h); the SCRAM maths are the
 * broker's own client side (src/sec/scram.c), which its inter-broker
 * connections use too. */
#include "login.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sec/scram.h"

int login_init(struct login *sc, const char *mechanism, const char *user, const char *password)
{
	memset(sc, 0, sizeof(*sc));
	if (!strcasecmp(mechanism, "PLAIN"))
		sc->mech = 0;
	else if (!strcasecmp(mechanism, "SCRAM-SHA-256"))
		sc->mech = SCRAM_SHA_256;
	else if (!strcasecmp(mechanism, "SCRAM-SHA-512"))
		sc->mech = SCRAM_SHA_512;
	else
		return -EINVAL;
	snprintf(sc->user, sizeof(sc->user), "%s", user ? user : "");
	snprintf(sc->password, sizeof(sc->password), "%s", password ? password : "");
	return 0;
}

int login_step(struct login *sc, const uint8_t *in, size_t inlen, char *out, size_t outsize, size_t *outlen)
{
	int r = 0;

	out[0] = 0;
	if (sc->mech == 0) { /* PLAIN: one token, [authzid] NUL user NUL password */
		size_t u = strlen(sc->user), p = strlen(sc->password);

		if (sc->step++ || u + p + 3 > outsize)
			return sc->step > 1 ? 1 : -EINVAL;
		out[0] = 0;
		memcpy(out + 1, sc->user, u + 1);
		memcpy(out + 2 + u, sc->password, p + 1);
		*outlen = u + p + 2;
		return 0;
	}
	if (sc->step == 0)
		r = scram_client_first(&sc->scram, sc->mech, sc->user, out, outsize);
	else if (sc->step == 1)
		r = scram_client_final(&sc->scram, sc->password, in, inlen, out, outsize) ? -EACCES : 0;
	else
		r = scram_client_verify(&sc->scram, in, inlen) ? -EACCES : 1;
	sc->step++;
	*outlen = strlen(out);
	return r;
}
