/*
 * fence.pml: the fenced acquisition's two rounds on N = 3 nodes, two
 * clients. Round one (acquire_fenced.lua) sets the key and reads its
 * fencing counter on each node; the fence is one more than the largest
 * counter a confirming node returned; round two (commit_fence.lua) raises
 * the counter to the fence on those nodes that still hold the key, and a
 * quorum of them grants the hold. Property: the fences of the holds, in
 * the order they are granted, strictly increase. See model/README.md.
 *
 * Switches (each must give a counterexample):
 *   -DNO_COMMIT  one round: the fence read, never written back
 *   -DVOLATILE   a restart without persistence loses the counter (and
 *                the key), between holds, as a quarantine would allow
 */

#define N        3
#define C        2
#define NEED     2
#define ATTEMPTS 5    /* acquisitions of the two clients together */

byte key[N];          /* 0 none, else client+1 */
byte counter[N];      /* no TTL */
bit  busy[C];         /* in an attempt or a hold: its keys do not expire */
byte attempts = 0;
byte lastFence = 0;   /* the fence of the last hold granted */
bit  restarted = 0;

/* acquire_fenced.lua on node n: set the key if free and return the
 * counter; the request or its reply may be lost. */
inline acquireOn(n, c) {
	atomic {
		if
		:: key[n] == 0 -> key[n] = c + 1; confirmed[n] = 1; got++;
			if :: counter[n] > largest -> largest = counter[n] :: else fi
		:: key[n] == 0 -> key[n] = c + 1      /* reply lost */
		:: else                               /* refused */
		:: true                               /* request lost */
		fi
	}
}

/* commit_fence.lua on node n, sent only to the nodes that confirmed */
inline commitOn(n, c) {
	atomic {
		if
		:: confirmed[n] && key[n] == c + 1 ->
#ifndef NO_COMMIT
			if :: counter[n] < fence -> counter[n] = fence :: else fi;
#endif
			if :: committed++ :: skip fi    /* the reply may be lost */
		:: confirmed[n] && key[n] == c + 1 -> skip   /* request lost */
		:: else
		fi;
		confirmed[n] = 0
	}
}

/* release.lua on node n; may be lost (the key then expires later) */
inline releaseOn(n, c) {
	atomic {
		if
		:: key[n] == c + 1 -> key[n] = 0
		:: true
		fi
	}
}

proctype Client(byte c) {
	bit confirmed[N];
	byte got, largest, fence, committed;

	do
	:: atomic { attempts < ATTEMPTS -> attempts++; busy[c] = 1 }
		acquireOn(0, c); acquireOn(1, c); acquireOn(2, c);
		if
		:: got >= NEED ->
			/* commitFence: one more than the largest counter read */
			fence = largest + 1;
			commitOn(0, c); commitOn(1, c); commitOn(2, c);
			if
			:: committed >= NEED ->
				atomic {
					assert(fence > lastFence);
					lastFence = fence
				}
				/* the hold; Unlock */
			:: else
			fi
		:: else
		fi;
		confirmed[0] = 0; confirmed[1] = 0; confirmed[2] = 0;
		got = 0; largest = 0; fence = 0; committed = 0;
		releaseOn(0, c); releaseOn(1, c); releaseOn(2, c);
		busy[c] = 0
	:: else -> break
	od
}

/* A key left by a lost release expires once its client's attempt or
 * hold is over (lock.pml checks that validity ends first). */
active proctype World() {
end:	do
	:: atomic { key[0] != 0 && !busy[key[0] - 1] -> key[0] = 0 }
	:: atomic { key[1] != 0 && !busy[key[1] - 1] -> key[1] = 0 }
	:: atomic { key[2] != 0 && !busy[key[2] - 1] -> key[2] = 0 }
#ifdef VOLATILE
	:: atomic { !restarted && !busy[0] && !busy[1] -> restarted = 1; key[0] = 0; counter[0] = 0 }
#endif
	od
}

init {
	atomic {
		run Client(0);
		run Client(1)
	}
}
