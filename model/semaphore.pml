/*
 * semaphore.pml: a semaphore of limit 2 on N = 3 nodes, three clients.
 * A permit is one of the limit's slots, each a key: acquire_permit.lua
 * sets, on each node, the first free slot in a fixed order, and a client
 * holds the slot that a quorum of nodes chose (tally.chosen). See
 * model/README.md.
 *
 * Switch (must give a counterexample):
 *   -DCOUNTING  a per-node counting semaphore: each node counts its
 *               holders and admits one while the count is under the
 *               limit; a client holds with a quorum of admissions.
 */

#define N      3
#define C      3
#define LIMIT  2
#define NEED   2
#define ATTEMPTS 4    /* acquisition rounds of the three clients together */

/* slot[n*LIMIT+k]: the holder of slot k on node n (0 none, else client+1) */
byte slot[N * LIMIT];
/* COUNTING: whether client c is counted on node n (counted[n*C+c]) */
bit  counted[N * C];

byte attempts = 0;
bit  held[C];
byte heldSlot[C];

#define holders (held[0] + held[1] + held[2])

#ifndef COUNTING
/* acquire_permit.lua on node n: SET NX the first free candidate; the
 * request may be lost, or its reply. votes[k] counts the confirmations of
 * slot k. */
inline acquireOn(n, c) {
	atomic {
		if
		:: slot[n*LIMIT] == 0 -> slot[n*LIMIT] = c + 1;
			if
			:: votes[0]++
			:: skip                 /* reply lost */
			fi
		:: slot[n*LIMIT] != 0 && slot[n*LIMIT+1] == 0 -> slot[n*LIMIT+1] = c + 1;
			if
			:: votes[1]++
			:: skip
			fi
		:: else                     /* every slot held: refused */
		:: true                     /* request lost */
		fi
	}
}

/* release.lua on slot k of node n, when it holds the token; may be lost */
inline releaseOn(n, k, c) {
	atomic {
		if
		:: slot[n*LIMIT+k] == c + 1 -> slot[n*LIMIT+k] = 0
		:: true
		fi
	}
}
#else
#define count(n) (counted[n*C] + counted[n*C+1] + counted[n*C+2])

inline acquireOn(n, c) {
	atomic {
		if
		:: count(n) < LIMIT && !counted[n*C+c] -> counted[n*C+c] = 1;
			if
			:: votes[0]++
			:: skip
			fi
		:: else
		:: true
		fi
	}
}

inline releaseOn(n, k, c) {
	atomic {
		if
		:: counted[n*C+c] -> counted[n*C+c] = 0
		:: true
		fi
	}
}

#endif

/* The release of every slot but keep on node n, when it holds the
 * token: one message, which may be lost. */
inline releaseOthers(n, keep, c) {
	atomic {
		if
		:: keep != 0 && slot[n*LIMIT] == c + 1 -> slot[n*LIMIT] = 0
		:: else
		fi;
		if
		:: keep != 1 && slot[n*LIMIT+1] == c + 1 -> slot[n*LIMIT+1] = 0
		:: else
		fi
	}
}

proctype Client(byte c) {
	byte votes[LIMIT];
	byte chosen;

acquire:
	if
	:: atomic { attempts < ATTEMPTS -> attempts++ }
	:: else -> goto done
	fi;
	acquireOn(0, c);
	acquireOn(1, c);
	acquireOn(2, c);
	/* tally.chosen: the slot a quorum confirmed (at most one can) */
	atomic {
		if
		:: votes[0] >= NEED -> chosen = 0
		:: votes[1] >= NEED -> chosen = 1
		:: else -> chosen = LIMIT        /* noChoice */
		fi;
		votes[0] = 0; votes[1] = 0;
		if
		:: chosen < LIMIT -> held[c] = 1; heldSlot[c] = chosen
		:: else
		fi
	}
	/* releaseCandidates: the keys of the other slots that may hold the
	 * token go, without waiting for the replies; with no slot won, every
	 * one. Each node's message may be lost. */
#ifndef COUNTING
	if :: releaseOthers(0, chosen, c) :: skip fi;
	if :: releaseOthers(1, chosen, c) :: skip fi;
	if :: releaseOthers(2, chosen, c) :: skip fi;
#else
	if
	:: chosen == LIMIT ->
		releaseOn(0, 0, c); releaseOn(1, 0, c); releaseOn(2, 0, c)
	:: else
	fi;
#endif
	if
	:: chosen == LIMIT -> chosen = 0; goto acquire
	:: else
	fi;
	/* Permit.Release: the hold ends, then the release is sent */
	atomic { held[c] = 0; heldSlot[c] = 0 };
	releaseOn(0, chosen, c); releaseOn(1, chosen, c); releaseOn(2, chosen, c);
	chosen = 0;
	goto acquire;
done:
	skip
}

/* The property: never more than LIMIT holders, and one slot has one
 * holder. */
active proctype Monitor() {
end:	atomic {
		(holders > LIMIT ||
		 (held[0] && held[1] && heldSlot[0] == heldSlot[1]) ||
		 (held[0] && held[2] && heldSlot[0] == heldSlot[2]) ||
		 (held[1] && held[2] && heldSlot[1] == heldSlot[2])) -> assert(false)
	}
}

init {
	atomic {
		run Client(0);
		run Client(1);
		run Client(2)
	}
}
