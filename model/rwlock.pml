/*
 * rwlock.pml: a read/write lock on N = 3 nodes, three clients: two
 * writers and a reader. On each node: the writer's key, the readers'
 * sorted set (a bit per reader) and the waiting marker. acquire_write.lua
 * sets the writer's key when no writer holds it and no reader's entry is
 * live, and leaves the marker when it finds readers; acquire_read.lua
 * adds an entry when no writer holds the key and no marker waits. A
 * quorum grants a hold. Property: a writer holds beside nobody. See
 * model/README.md.
 *
 * Switches (each must give a counterexample):
 *   -DREADERS_IGNORE_WRITER  acquire_read.lua adds an entry whatever the
 *                            writer's key
 *   -DWRITER_IGNORES_READERS acquire_write.lua sets the key whatever the
 *                            readers' entries
 */

#define N        3
#define C        3
#define NEED     2
#define ATTEMPTS 6    /* acquisitions of the three clients together */

#define isWriter(c) (c != 1)

byte writer[N];       /* the writer's key: 0 none, else client+1 */
bit  reader[N];       /* the reader's (client 1's) entry in the sorted set */
bit  marker[N];       /* the waiting marker */
bit  busy[C];         /* in an attempt or a hold: its keys do not expire */
bit  held[C];
byte attempts = 0;

/* acquire_write.lua on node n */
inline acquireWriteOn(n, c) {
	atomic {
		if
		:: writer[n] == 0 &&
#ifndef WRITER_IGNORES_READERS
			!reader[n] &&
#endif
			true ->
			writer[n] = c + 1; marker[n] = 0;
			if :: got++ :: skip fi          /* the reply may be lost */
#ifndef WRITER_IGNORES_READERS
		:: writer[n] == 0 && reader[n] -> marker[n] = 1   /* refused: waits */
#endif
		:: else                             /* refused */
		:: true                             /* request lost */
		fi
	}
}

/* acquire_read.lua on node n */
inline acquireReadOn(n, c) {
	atomic {
		if
		:: 
#ifndef READERS_IGNORE_WRITER
			writer[n] == 0 && !marker[n] &&
#endif
			!reader[n] ->
			reader[n] = 1;
			if :: got++ :: skip fi
		:: else
		:: true
		fi
	}
}

/* release.lua or release_read.lua on node n; may be lost */
inline releaseOn(n, c) {
	atomic {
		if
		:: isWriter(c) && writer[n] == c + 1 -> writer[n] = 0
		:: !isWriter(c) -> reader[n] = 0
		:: true
		fi
	}
}

proctype Client(byte c) {
	byte got;
	do
	:: atomic { attempts < ATTEMPTS -> attempts++; busy[c] = 1 }
		if
		:: isWriter(c) -> acquireWriteOn(0, c); acquireWriteOn(1, c); acquireWriteOn(2, c)
		:: else -> acquireReadOn(0, c); acquireReadOn(1, c); acquireReadOn(2, c)
		fi;
		atomic {
			if
			:: got >= NEED -> held[c] = 1
			:: else
			fi;
			got = 0
		}
		/* the hold, then Unlock: the hold ends before the release */
		held[c] = 0;
		releaseOn(0, c); releaseOn(1, c); releaseOn(2, c);
		busy[c] = 0
	:: else -> break
	od
}

/* Keys left by lost releases expire once their client is idle (lock.pml
 * checks validity against expiry); a marker expires at any time. */
active proctype World() {
end:	do
	:: atomic { writer[0] != 0 && !busy[writer[0] - 1] -> writer[0] = 0 }
	:: atomic { writer[1] != 0 && !busy[writer[1] - 1] -> writer[1] = 0 }
	:: atomic { writer[2] != 0 && !busy[writer[2] - 1] -> writer[2] = 0 }
	:: atomic { reader[0] && !busy[1] -> reader[0] = 0 }
	:: atomic { reader[1] && !busy[1] -> reader[1] = 0 }
	:: atomic { reader[2] && !busy[1] -> reader[2] = 0 }
	:: atomic { marker[0] -> marker[0] = 0 }
	:: atomic { marker[1] -> marker[1] = 0 }
	:: atomic { marker[2] -> marker[2] = 0 }
	od
}

/* The property: a writer holds beside nobody. */
active proctype Monitor() {
end:	atomic {
		((held[0] || held[2]) && held[0] + held[1] + held[2] > 1) -> assert(false)
	}
}

init {
	atomic {
		run Client(0);
		run Client(1);
		run Client(2)
	}
}
