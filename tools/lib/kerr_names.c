/* kerr_names.c - the broker's table of Kafka error names, compiled into the
 * tools' library. The Makefile links tools against the files in tools/lib
 * and the codec objects wire.c needs (kerr.c is not among them); this
 * one-line unit reuses src/proto/kerr.c (which depends on nothing) instead
 * of keeping a second copy of ~100 names that would drift. */
#include "proto/kerr.c"
