/*
 * lock.pml: one lock on N = 3 independent nodes, two clients, acquire,
 * extend and release with the validity rule. See model/README.md for what
 * it abstracts, what it leaves out, and the code it follows.
 *
 * Configuration: -DRESTART adds one restart without persistence (and
 * leaves the extension out).
 * Switches (each must give a counterexample):
 *   -DNO_DRIFT       validity = ttl - elapsed, without the drift allowance
 *   -DNO_QUARANTINE  with -DRESTART: a restarted node votes at once
 */

#define N      3      /* nodes */
#define C      2      /* clients */
#define NEED   2      /* quorum(3) = 3/2+1 */
#define TTL    3      /* the lock's TTL, in ticks */
#define DRIFT  1      /* the bound of a node clock's drift over one TTL */
#define MAXT   4      /* the last global instant explored */
#ifdef RESTART
#define RESTARTS 1    /* node restarts in one run */
#else
#define RESTARTS 0
#endif

#ifdef NO_DRIFT
#define ALLOWANCE 0
#else
#define ALLOWANCE DRIFT
#endif

/* The quarantine's threshold: MaxTTL and its drift allowance, counted
 * by the restarted node's clock, which may run fast by DRIFT. */
#define THRESHOLD (TTL + DRIFT)

byte now = 0;                 /* global time */

/* Node state: the key's holder (0 none, else client+1) and the global
 * time it was last set (SET NX PX, or PEXPIRE in extend.lua). The node's
 * own clock expires it somewhere in [set+TTL-DRIFT, set+TTL+DRIFT]. */
byte owner[N];
byte set[N];
byte quarantined[N];          /* global time until which its votes do not count */
byte restarts = 0;

#define lo(n) (set[n] + TTL - DRIFT)
#define hi(n) (set[n] + TTL + DRIFT)

/* Client beliefs: held and the end of validity, by global time. */
bit  held[C];
byte until[C];

#define believes(c) (held[c] && now < until[c])

/* A vote counts unless the node is quarantined (Quarantine.Judge). */
#ifdef NO_QUARANTINE
#define counts(n) 1
#else
#define counts(n) (now >= quarantined[n])
#endif

/* One SET key token NX PX ttl to node n from client c: applied with its
 * reply, lost before the node, or applied with its reply lost. A vote
 * adds to got. */
inline acquireOn(n, c) {
	atomic {
		if
		:: owner[n] == 0 -> owner[n] = c + 1; set[n] = now; got = got + counts(n)
		:: owner[n] == 0 -> owner[n] = c + 1; set[n] = now  /* reply lost */
		:: else                                            /* held: refused, or lost */
		:: true                                            /* request lost */
		fi
	}
}

/* extend.lua on one key: PEXPIRE when it holds the token. */
inline extendOn(n, c) {
	atomic {
		if
		:: owner[n] == c + 1 -> set[n] = now; got = got + counts(n)
		:: owner[n] == c + 1 -> set[n] = now               /* reply lost */
		:: else
		:: true
		fi
	}
}

/* release.lua: DEL when the key holds the token; the request may be lost. */
inline releaseOn(n, c) {
	atomic {
		if
		:: owner[n] == c + 1 -> owner[n] = 0; set[n] = 0
		:: true
		fi
	}
}

inline releaseAll(c) {
	releaseOn(0, c); releaseOn(1, c); releaseOn(2, c)
}

/* A client: acquire (Mutex.attempt), then extend at most once
 * (Mutex.extend, applyExtension), then release (Unlock), and again while
 * time is left. A round is three steps: its start, its commands reaching
 * the nodes, and its replies counted; time may pass, and the other client
 * may act, between any two. */
proctype Client(byte c) {
	byte start;
	byte got;

acquire:
	if
	:: now < MAXT
	:: else -> goto done
	fi;
	start = now;
	atomic { acquireOn(0, c); acquireOn(1, c); acquireOn(2, c) };
	/* a quorum, and validity(ttl, elapsed, driftFactor) > 0: the hold
	 * is valid until start + ttl - drift */
	atomic {
		if
		:: got >= NEED && TTL > (now - start) + ALLOWANCE ->
			held[c] = 1;
			until[c] = start + TTL - ALLOWANCE
		:: else -> skip
		fi;
		start = 0; got = 0
	}
	if
	:: held[c] -> goto holding
	:: else -> atomic { releaseAll(c) }; goto acquire   /* releaseAfterFailure */
	fi;

holding:
	if
#ifndef RESTART
	:: now < until[c] ->
		start = now;
		atomic { extendOn(0, c); extendOn(1, c); extendOn(2, c) };
		/* applyExtension: a quorum, end before until and remaining > 0
		 * move until to start + ttl - drift; otherwise until becomes
		 * the shorter of the two */
		atomic {
			if
			:: got >= NEED && now < until[c] && TTL > (now - start) + ALLOWANCE ->
				until[c] = start + TTL - ALLOWANCE
			:: else ->
				if
				:: start + TTL - ALLOWANCE < until[c] -> until[c] = start + TTL - ALLOWANCE
				:: else -> skip
				fi
			fi;
			start = 0; got = 0
		}
#endif
	:: true
	fi;
	/* Unlock: the hold ends before the release is sent */
	atomic { held[c] = 0; until[c] = 0; releaseAll(c) };
	goto acquire;
done:
	skip
}

/* Time passes by one tick, unless a key's latest expiry has come. Each
 * node's clock expires its key somewhere in [lo, hi]. */
active proctype World() {
	do
	:: atomic {
		now < MAXT &&
		!(owner[0] != 0 && hi(0) <= now) &&
		!(owner[1] != 0 && hi(1) <= now) &&
		!(owner[2] != 0 && hi(2) <= now) -> now++
	   }
	:: atomic { owner[0] != 0 && now >= lo(0) -> owner[0] = 0; set[0] = 0 }
	:: atomic { owner[1] != 0 && now >= lo(1) -> owner[1] = 0; set[1] = 0 }
	:: atomic { owner[2] != 0 && now >= lo(2) -> owner[2] = 0; set[2] = 0 }
	/* a restart without persistence: the node loses its key, and its
	 * new epoch marker keeps it out for THRESHOLD by its own clock, which
	 * may run fast by DRIFT. The nodes are alike in every step of the
	 * model, so node 0 stands for any. */
	:: atomic {
		restarts < RESTARTS -> restarts++;
		owner[0] = 0; set[0] = 0;
		quarantined[0] = now + THRESHOLD - DRIFT
	   }
	/* a restart with persistence (appendfsync always) keeps every key
	 * and its marker's age: nothing changes for the lock */
	:: now == MAXT -> break
	od
}

/* The property: no two clients believe they hold the lock at one
 * global instant. */
active proctype Monitor() {
end:	atomic { believes(0) && believes(1) -> assert(false) }
}

init {
	atomic {
		run Client(0);
		run Client(1)
	}
}
