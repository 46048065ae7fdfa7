/*
 * cshut.h - the broker's side of Kafka's controlled shutdown: on SIGTERM,
 * with controlled.shutdown.enable, a ControlledShutdown goes to the active
 * controller over an inter-broker connection (net/client.h) and the event
 * loop keeps serving until the answer, or until
 * controlled.shutdown.max.retries x controlled.shutdown.retry.backoff.ms
 * have passed; the outcome is logged and the clean shutdown goes on.
 */
#ifndef GREGOR_BROKER_CSHUT_H
#define GREGOR_BROKER_CSHUT_H

#include <stdbool.h>

struct broker;

/*
 * Starts a controlled shutdown; done(b) runs once (on the loop) when it
 * ends, answered or not.  False if none is started (disabled, not in
 * cluster mode, no controller known, or one already under way): the caller
 * stops at once.
 */
bool cshut_start(struct broker *b, void (*done)(struct broker *b));
/* Frees what a controlled shutdown holds (before the loop is freed). */
void cshut_stop(void);

#endif
