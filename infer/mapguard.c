/*
 * mapguard.c - the SIGBUS guard for file mappings (see mapguard.h).
 *
 * The handler reads the slots with atomic loads only; add and remove take a
 * mutex between themselves. A slot is cleared before its mapping goes away,
 * so a fault that races an unmap finds no slot and is chained like any other.
 * mmap is not on POSIX's list of async-signal-safe functions, but on Linux it
 * is a single system call with no user-space state, which is what matters in
 * a handler.
 */
#include "mapguard.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

struct slot {
	_Atomic uintptr_t base; /* 0: free */
	_Atomic size_t size;
	atomic_bool hit;
};

/* The registry (process-wide by necessity, see mapguard.h). */
static struct slot slots[MAPGUARD_SLOTS];
static struct sigaction previous;
static bool installed;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	for (int i = 0; i < MAPGUARD_SLOTS; i++) {
		uintptr_t b = atomic_load(&slots[i].base);
		size_t n = atomic_load(&slots[i].size);
		if (!b || a < b || a - b >= n) continue;
		/* Zero pages in place of the file's: the faulting read is retried
		 * when the handler returns, and succeeds. */
		void *p = mmap((void *)b, n, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
		               0);
		if (p == MAP_FAILED) break; /* cannot repair: die as before */
		atomic_store(&slots[i].hit, true);
		return;
	}
	if (previous.sa_flags & SA_SIGINFO) {
		if (previous.sa_sigaction) {
			previous.sa_sigaction(sig, si, uc);
			return;
		}
	} else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
		previous.sa_handler(sig);
		return;
	}
	/* The default action: restore it; the fault repeats and kills us. */
	signal(SIGBUS, SIG_DFL);
}

static int install(void)
{
	if (installed) return 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &previous) != 0) return -errno;
	installed = true;
	return 0;
}

int mapguard_add(const void *base, size_t size)
{
	if (!base || !size) return -EINVAL;
	pthread_mutex_lock(&mu);
	int rc = install();
	if (rc == 0) {
		rc = -ENOSPC;
		for (int i = 0; i < MAPGUARD_SLOTS; i++) {
			if (atomic_load(&slots[i].base)) continue;
			atomic_store(&slots[i].hit, false);
			atomic_store(&slots[i].size, size);
			atomic_store(&slots[i].base, (uintptr_t)base);
			rc = i;
			break;
		}
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

void mapguard_remove(int slot)
{
	if (slot < 0 || slot >= MAPGUARD_SLOTS) return;
	pthread_mutex_lock(&mu);
	atomic_store(&slots[slot].base, (uintptr_t)0);
	atomic_store(&slots[slot].size, (size_t)0);
	pthread_mutex_unlock(&mu);
}

bool mapguard_hit(int slot)
{
	if (slot < 0 || slot >= MAPGUARD_SLOTS) return false;
	return atomic_load(&slots[slot].hit);
}
