/*
 * throttle.h - client quota enforcement on the request pipeline (quota.h
 * measures, this applies): each reply is counted against the quotas of its
 * client and, over a quota, carries throttle_time_ms while the connection
 * stops being read for that long.
 */
#ifndef GREGOR_BROKER_THROTTLE_H
#define GREGOR_BROKER_THROTTLE_H

#include <stdint.h>

#include "broker/api.h"

/*
 * Called as rq is answered (reply true) or finished without a reply:
 * records the request against its client's quotas, sets the response's
 * ThrottleTimeMs and mutes the connection.  Returns how long the reply
 * must be held back (ms): the throttle time for versions older than
 * KIP-219's, whose clients do not back off by themselves; 0 otherwise.
 */
int64_t throttle_apply(struct req *rq, bool reply);

#endif
