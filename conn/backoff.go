package conn

import "time"

// NextBackoff returns the wait before the next try of something that is
// tried again and again (a connection that carries subscriptions, the
// following of a sentinel), after a try that lasted lasted and ended:
// twice the last wait, within [low, high], unless the try lasted at least
// high: then it ended as news, not as a loop, and the next try comes after
// low.
func NextBackoff(last, lasted, low, high time.Duration) time.Duration {
	if lasted >= high {
		last = 0
	}
	return min(max(2*last, low), high)
}
