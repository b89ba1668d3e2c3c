/*
 * fair.pml: a fair lock's line on N = 3 nodes: a waiter W in line, and a
 * holder H that takes the lock again and again as a newcomer. W joins the
 * line on every node (fair_ticket.lua, fair_enqueue.lua), then tries
 * (acquire_fair.lua with its identity): a node sets the key for the
 * first in line when the key is free. A newcomer is refused by a node
 * where anybody is in line. Property (liveness): W eventually holds the
 * lock, under weak fairness. See model/README.md.
 *
 * Switch (must give a counterexample):
 *   -DNO_LINE  a newcomer takes the key whenever it is free (SET NX),
 *              whoever waits: H's holds can follow one another forever
 */

#define N    3
#define NEED 2

byte key[N];          /* 0 none, 1 W, 2 H */
bit  queued[N];       /* W in line on the node, with a live heartbeat */
bit  wHolds = 0;

/* acquire_fair.lua for W, in line: the key free and W first */
inline waiterOn(n) {
	atomic {
		if
		:: key[n] == 0 && queued[n] -> key[n] = 1; queued[n] = 0; got++
		:: else
		fi
	}
}

/* acquire_fair.lua for a newcomer: SET NX when nobody is in line */
inline newcomerOn(n) {
	atomic {
		if
#ifdef NO_LINE
		:: key[n] == 0 -> key[n] = 2; got++
#else
		:: key[n] == 0 && !queued[n] -> key[n] = 2; got++
#endif
		:: else
		fi
	}
}

/* release_fair.lua: DEL when the key holds the token */
inline releaseOn(n, who) {
	atomic { if :: key[n] == who -> key[n] = 0 :: else fi }
}

active proctype Waiter() {
	byte got;
join:
	/* joinLine: fair_ticket.lua, then fair_enqueue.lua on every node (a
	 * waiter already in line keeps its place) */
	queued[0] = 1; queued[1] = 1; queued[2] = 1;
	do
	:: waiterOn(0); waiterOn(1); waiterOn(2);
		if
		:: got >= NEED -> wHolds = 1; break
		:: else ->
			/* the release of what it set; the nodes that served it
			 * took it out of line: it joins again */
			got = 0;
			releaseOn(0, 1); releaseOn(1, 1); releaseOn(2, 1);
			goto join
		fi
	od;
end:	skip
}

active proctype Holder() {
	byte got;
end:	do
	:: newcomerOn(0); newcomerOn(1); newcomerOn(2);
		got = 0;
		/* a hold or a failed attempt: either way the release follows */
		releaseOn(0, 2); releaseOn(1, 2); releaseOn(2, 2)
	od
}

ltl served { <> wHolds }
