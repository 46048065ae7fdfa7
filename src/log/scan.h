/*
 * scan.h - reading a whole partition back, batch by batch.
 *
 * The coordinators rebuild their state at start-up from their internal
 * topics (__consumer_offsets, __transaction_state) by replaying every batch
 * from the log start to the high watermark.  This is the one place that
 * does it: it reads the log in chunks of whole batches and hands each batch
 * to a callback.  Not for serving fetches (those never copy record data).
 */
#ifndef GREGOR_LOG_SCAN_H
#define GREGOR_LOG_SCAN_H

#include <stdint.h>

#include "proto/records.h"

struct part;

/* Called for each batch; p holds the whole batch (h->size bytes). */
typedef void part_scan_fn(void *arg, const uint8_t *p, const struct batch_hdr *h);

/* Replays [log start, high watermark).  Returns 0, -EBADMSG or -errno. */
int part_scan(struct part *part, part_scan_fn *fn, void *arg);
/*
 * Replays [log start, end) (end at most the log end).  A replica that just
 * became leader reads to its log end, as its high watermark may still lag
 * what the previous leader acknowledged.
 */
int part_scan_to(struct part *part, int64_t end, part_scan_fn *fn, void *arg);

#endif
