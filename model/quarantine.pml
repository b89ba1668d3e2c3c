/*
 * quarantine.pml: the epoch markers and the verdicts of the quarantine
 * (Options.Quarantine). Client A holds the lock on nodes 0 and 1 of
 * three; node 2 is free; faults strike node 1 only. Client B's attempt
 * wins node 2 and is refused by node 0, so B holds the lock exactly when
 * node 1's vote counts for it. The property: B is never granted while A
 * believes it holds. See model/README.md.
 *
 * Switches (each must give a counterexample):
 *   -DNO_QUARANTINE  votes count whatever the marker
 *   -DNO_FOLLOWUP    a vote judged by the verdict cached from the
 *                    quarantine's own read, with no marker read after it
 *                    on the vote's connection
 *   -DREPL_DURABLE   the durable form of the marker replicated, so that
 *                    a promoted replica's restart trusts it as its own
 *   -DOLD_SAME       a marker with the server's own run_id trusted
 *                    whatever its replication ID and a promotion
 *   -DMARKER_ONLY    the read after a vote gives the marker alone, not the
 *                    server's replication ID: a connection that survives a
 *                    demotion and promotion keeps its verdict
 */

#define TTL      3
#define DRIFT    1
#define THRESH   (TTL + DRIFT)       /* MaxTTL and its drift allowance */
#define START    THRESH              /* A acquires when the marker is old enough */
#define HELD     (START + TTL - DRIFT) /* A believes it holds until then */
#define FAULTS   3

byte now = START;
byte faults = 0;

/* The process serving node 1, and its keyspace. */
byte runid = 1;            /* run_id */
byte replid = 1;         /* master_replid */
bit  promoted = 0;       /* second_repl_offset != -1 */
bit  lossSign = 0;       /* a flush, REPLICAOF or promotion in its statistics */
byte started = 0;        /* when it started (uptime) */
bit  fsync;              /* appendonly yes, appendfsync always */
byte key = 1;            /* the lock key: 0 none, 1 A's, 2 B's */
/* the marker "RUN WRITTEN REPLID[ durable]"; mrun 0: no marker */
byte mrun = 1; byte mwritten = 0; byte mreplid = 1; bit mdurable = 0;
/* its append-only file, which a restart reads when fsync */
byte akey = 1;
byte arun = 1; byte awritten = 0; byte areplid = 1; bit adurable;

/* Its replica: a run_id, and what it received. rkey is A's key when the
 * replication carried it before the fault (chosen at the fault). */
byte rrun = 2;
byte rmrun = 1; byte rmwritten = 0; byte rmreplid = 1; bit rmdurable = 0;
byte ids = 2;            /* the last run_id or replication ID given */

/* Client B's view of node 1 (quarantineNode). */
bit  pending;            /* its marker not read since it connected */
byte until = 0;          /* its quarantine's end */
byte crun = 1; byte cwritten = 0; byte creplid = 1; /* the marker read */
bit  invalidation = 0;   /* a tracking message on its way to B */
bit  dropped = 0;        /* B's connection closed under a command */
bit  granted = 0;
bit  ready = 0;          /* the initial choices are made */

/* marker.lua after a vote: the marker and the server's replication ID */
#ifdef MARKER_ONLY
#define markerIsCached (mrun == crun && mwritten == cwritten && mreplid == creplid && mrun != 0)
#else
#define markerIsCached (mrun == crun && mwritten == cwritten && mreplid == creplid && mrun != 0 && replid == creplid)
#endif

/* epoch.lua, run by a client whose connection found appendfsync always
 * when durableArg; the node's clock may read the marker's age DRIFT
 * long. Leaves the marker's age in age, the marker in the keyspace. */
inline writeMarker(written) {
	mrun = runid; mwritten = written; mreplid = replid; mdurable = 0;
	/* replicated in the plain form; the durable form in the file alone */
	rmrun = runid; rmwritten = written; rmreplid = replid;
#ifdef REPL_DURABLE
	rmdurable = durable;
#else
	rmdurable = 0;
#endif
	if
	:: fsync -> arun = runid; awritten = written; areplid = replid; adurable = durable
	:: else
	fi
}

inline epoch(durableArg) {
	durable = durableArg && !promoted && fsync;
#ifdef OLD_SAME
	same = (mrun == runid);
#else
	same = (mrun == runid && (mreplid == replid || !promoted));
#endif
	restarted = (mrun != 0 && mrun != runid && mdurable && durable);
	if
	:: mrun != 0 && (same || restarted) ->
		if
		:: mrun != runid || mreplid != replid -> writeMarker(mwritten)
		:: else
		fi;
		age = now - mwritten
	:: else ->
		/* kept(): since its start, with no sign of a loss */
		if
		:: !lossSign && !promoted -> writeMarker(started); age = now - started
		:: else -> writeMarker(now); age = 0
		fi;
		invalidation = 1          /* the marker changed: tracked */
	fi;
	if
	:: age = age + DRIFT          /* the node's clock runs fast */
	:: skip
	fi
}

/* B: Lock attempts while A believes it holds. */
active proctype ClientB() {
	byte age; bit durable; bit same; bit restarted;
	bit vote;

	ready;
	do
	:: now >= HELD -> break
	:: now < HELD ->
		/* Quarantine.Verify, before the round */
		atomic {
			if
			:: pending ->
				epoch(fsync);
				until = now + THRESH - age;
				crun = mrun; cwritten = mwritten; creplid = mreplid;
				pending = 0;
				age = 0; durable = 0; same = 0; restarted = 0;
				/* WatchMarker: a marker missing at the arming read */
				if
				:: mrun == 0 -> pending = 1
				:: else
				fi
			:: else
			fi
		}
		/* the vote: SET NX PX on its connection */
		atomic {
			dropped = 0;
			if
			:: key == 0 -> key = 2; vote = 1
			:: else -> vote = 0
			fi
		}
		/* Quarantine.Judge, after the follow-up read of the marker on the
		 * same connection (mux.Round.FollowUp) */
		atomic {
#ifndef NO_FOLLOWUP
			if
			:: vote && (dropped || !markerIsCached) -> vote = 0; pending = 1
			:: else
			fi;
#endif
#ifndef NO_QUARANTINE
			if
			:: pending || now < until -> vote = 0
			:: else
			fi;
#endif
			if
			:: vote -> granted = 1
			:: else -> if :: key == 2 -> key = 0 :: else fi   /* released */
			fi;
			vote = 0
		}
		assert(!(granted && now < HELD));
		granted = 0;
		if :: key == 2 -> key = 0 :: else fi   /* Unlock */
	od
}

active proctype World() {
	byte age; bit durable; bit same; bit restarted;
	bit others = 1;              /* another client's epoch check, once */

	atomic {
		if :: fsync = 1 :: fsync = 0 fi;
		adurable = fsync;        /* the marker was written durable */
#ifdef REPL_DURABLE
		rmdurable = fsync;       /* and replicated so */
#endif
		if
		:: pending = 1
		:: pending = 0           /* B verified earlier: the old marker */
		fi;
		ready = 1
	}

	do
	:: atomic { now < HELD -> now++ }
	:: now >= HELD -> break
	/* the tracking message reaches B */
	:: atomic { invalidation -> invalidation = 0; pending = 1 }
	/* another client's quarantine check of node 1 */
	:: atomic { others -> others = 0; epoch(fsync); age = 0; durable = 0; same = 0; restarted = 0 }
	/* FLUSHALL */
	:: atomic { faults < FAULTS -> faults++;
		key = 0; mrun = 0; mwritten = 0; mreplid = 0; mdurable = 0;
		rmrun = 0; rmwritten = 0; rmreplid = 0; rmdurable = 0;   /* replicated */
		if :: fsync -> akey = 0; arun = 0; awritten = 0; areplid = 0; adurable = 0 :: else fi;
		lossSign = 1; invalidation = 1 }
	/* a restart: with appendfsync always, it reads its file; without, it
	 * comes back empty. B's connection closes. */
	:: atomic { faults < FAULTS -> faults++;
		ids++; runid = ids; ids++; replid = ids; promoted = 0; lossSign = 0; started = now;
		if
		:: fsync -> key = akey; mrun = arun; mwritten = awritten; mreplid = areplid; mdurable = adurable
		:: else -> key = 0; mrun = 0; mwritten = 0; mreplid = 0; mdurable = 0
		fi;
		pending = 1; dropped = 1 }
	/* a failover: the replica is promoted, with A's key when replication
	 * carried it. B's connection closes (Sentinel names a new server). */
	:: atomic { faults < FAULTS -> faults++;
		runid = rrun; ids++; replid = ids; promoted = 1; lossSign = 1; started = 0;
		if :: key = 1 :: key = 0 fi;
		mrun = rmrun; mwritten = rmwritten; mreplid = rmreplid; mdurable = rmdurable;
		akey = key; arun = mrun; awritten = mwritten; areplid = mreplid; adurable = mdurable;
		ids++; rrun = ids;
		pending = 1; dropped = 1 }
	/* the master demoted and promoted again: it resynchronised from the
	 * replica (a full sync: its keyspace replaced, a flush for tracking),
	 * same run_id. B's connection may close (a Sentinel-served one does,
	 * on +switch-master or READONLY) or survive: REPLICAOF closes no
	 * client's connection. */
	:: atomic { faults < FAULTS -> faults++;
		if :: key = 1 :: key = 0 fi;
		mrun = rmrun; mwritten = rmwritten; mreplid = rmreplid; mdurable = rmdurable;
		akey = key; arun = mrun; awritten = mwritten; areplid = mreplid; adurable = mdurable;
		ids++; replid = ids; promoted = 1; lossSign = 1;
		invalidation = 1;
		if :: pending = 1; dropped = 1 :: skip fi
	   }
	od
}
