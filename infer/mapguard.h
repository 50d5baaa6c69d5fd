/*
 * mapguard.h - survives a mapped file that shrinks under us.
 *
 * A model file is mapped, not read. When another process truncates it (or
 * copies a smaller file over it: `cp` truncates in place), reading a page past
 * the new end raises SIGBUS in whichever thread touches it, a kernel worker
 * included, and the process dies with no message. The guard is the one
 * process-wide SIGBUS handler for registered mappings: a fault inside one
 * replaces that whole mapping with zero pages (so the read, and every later
 * one, completes with zeros) and marks it hit. Its owner then drops what was
 * computed from it and reloads (gguf_file_changed, model_file_changed).
 * A fault outside every registered mapping goes to the handler that was
 * there before (or kills the process as it would have).
 *
 * The registry is the one global of the engine: a signal handler cannot be
 * given a context. It holds at most MAPGUARD_SLOTS mappings at a time.
 */
#ifndef INFILL_INFER_MAPGUARD_H
#define INFILL_INFER_MAPGUARD_H

#include <stdbool.h>
#include <stddef.h>

#define MAPGUARD_SLOTS 16

/* Installs the handler (once per process; later calls do nothing) and
 * registers [base, base + size), a read-only private file mapping. Returns a
 * slot (>= 0) for the calls below, or -ENOSPC when every slot is taken (the
 * mapping is then unguarded), or a negative errno from sigaction. */
int mapguard_add(const void *base, size_t size);

/* Unregisters a slot before its mapping is unmapped; accepts a negative slot. */
void mapguard_remove(int slot);

/* Whether a fault hit this slot's mapping (its contents are now zeros). */
bool mapguard_hit(int slot);

#endif
