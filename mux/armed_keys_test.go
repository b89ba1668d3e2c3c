package mux

import (
	"hash/maphash"
	"runtime"
	"slices"
	"strconv"
	"testing"
)

// A key whose hash another armed key holds is armed, disarmed and
// reported all the same, and once that hash is free again it is armed
// in its place, never twice.
func TestArmedKeysWithCollidingHashes(t *testing.T) {
	a := makeArmedKeys()
	hash := maphash.String(armedSeed, "b")
	a.byHash[hash] = armedKey{key: "a", tag: 1} // as if "a" hashed like "b"
	a.arm("b", 2)
	if armed, ok := a.disarm([]byte("b")); !ok || armed != (armedKey{key: "b", tag: 2}) {
		t.Fatalf("disarm(b) = %+v, %v; want b under tag 2", armed, ok)
	}
	a.arm("b", 3)
	a.arm("b", 4) // the arming in effect is replaced, not added
	if a.len() != 2 {
		t.Fatalf("%d armed keys, want 2", a.len())
	}
	delete(a.byHash, hash) // "a" disarmed
	a.arm("b", 5)
	if armed, ok := a.disarm([]byte("b")); !ok || armed.tag != 5 {
		t.Fatalf("disarm(b) = %+v, %v; want b under tag 5", armed, ok)
	}
	if armed, ok := a.disarm([]byte("b")); ok {
		t.Fatalf("b disarmed twice, the second time under tag %d", armed.tag)
	}

	a.byHash[hash] = armedKey{key: "a", tag: 1}
	a.arm("b", 6)
	a.arm("c", 7)
	var keys []string
	for _, invalidation := range a.disarmAll(nil, 0, InvalidatedFlush, nil) {
		keys = append(keys, invalidation.Key+":"+strconv.FormatUint(invalidation.Tag, 10))
	}
	slices.Sort(keys)
	if want := []string{"a:1", "b:6", "c:7"}; !slices.Equal(keys, want) {
		t.Fatalf("disarmAll reported %v, want %v", keys, want)
	}
	if a.len() != 0 {
		t.Fatalf("%d armed keys after disarmAll, want 0", a.len())
	}
}

// BenchmarkArmedKeys is the armed keys of one node with the holds of a
// renewing client: one op is one renewal of one hold, its key disarmed by
// the change its own write made and armed again. B/key is the heap the
// armed keys take per key.
func BenchmarkArmedKeys(b *testing.B) {
	const holds = 100_000
	keys := make([]string, holds)
	pushed := make([][]byte, holds)
	for i := range keys {
		keys[i] = "lockmux:bench:hold:" + strconv.Itoa(i)
		pushed[i] = []byte(keys[i])
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a := makeArmedKeys()
	for i, key := range keys {
		a.arm(key, uint64(i))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := a.disarm(pushed[i]); !ok {
			b.Fatalf("%s was not armed", keys[i])
		}
		a.arm(keys[i], uint64(i))
		i = (i + 1) % holds
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/holds, "B/key")
	runtime.KeepAlive(a)
}
