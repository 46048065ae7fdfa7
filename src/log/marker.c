/* marker.c - transaction markers with coordinator-epoch fencing (see marker.h). */
#include "log/marker.h"

#include <errno.h>

#include "log/partition.h"
#include "log/pstate.h"
#include "proto/records.h"
#include "util/buf.h"

int marker_append(struct part *part, const struct marker *m, int64_t now_ms, struct part_append_info *info)
{
	const struct pstate_entry *e = pstate_find(part_pstate(part), m->producer_id);
	struct wr w;
	int err;

	if (e && m->coordinator_epoch < e->coordinator_epoch)
		return -ESTALE;
	if (e && m->producer_epoch < e->epoch)
		return -EPERM;
	wr_init(&w);
	err = records_build_control(&w, m->producer_id, m->producer_epoch, m->commit, m->coordinator_epoch, now_ms);
	if (!err)
		err = w.err ? w.err : part_append(part, w.buf, w.len, now_ms, info);
	wr_release(&w);
	return err;
}
