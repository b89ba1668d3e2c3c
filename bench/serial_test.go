package bench

import "testing"

// BenchmarkSerial locks and unlocks one key from one goroutine.
func BenchmarkSerial(b *testing.B) {
	forEachPeer(b, nil, func(b *testing.B, l locker) {
		s := newSessions(b, l, 1, sameKey("bench:serial"))[0]
		ctx := b.Context()
		b.ReportAllocs()
		m := startMeter(b, 0)
		for range b.N {
			if err := cycle(ctx, s); err != nil {
				b.Fatal(err)
			}
		}
		m.stop(b)
	})
}
