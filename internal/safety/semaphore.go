package safety

import (
	"fmt"
	"strings"
)

// checkSemaphores is C7: a sweep over the enter and exit events of the
// permits of each semaphore of Options.Semaphores (keys NAME:permit:SLOT)
// in the recorder's order. When a hold enters a permit at t, the holds
// inside the semaphore's permits that still claim to be valid at t, the
// entering one included, must be at most the semaphore's limit; one more
// is a VIOLATION. A hold inside after its validity does not count: C1
// reports it as STALE on its slot.
func checkSemaphores(history []Event, ix *historyIndex, options Options, report *Report) {
	if len(options.Semaphores) == 0 {
		return
	}
	inside := make(map[string]map[string]*hold) // semaphore → holds inside its permits
	for _, e := range history {
		name, ok := semaphoreOf(e.Key, options.Semaphores)
		if !ok {
			continue
		}
		switch e.Kind {
		case KindEnter:
			entering := ix.holds[e.Hold]
			if entering == nil {
				continue
			}
			holders := inside[name]
			if holders == nil {
				holders = make(map[string]*hold)
				inside[name] = holders
			}
			holders[entering.id] = entering
			var valid []string
			for _, h := range holders {
				if e.T < h.deadline {
					valid = append(valid, h.id+" on "+h.key)
				}
			}
			if limit := options.Semaphores[name]; len(valid) > limit {
				report.Semaphores = append(report.Semaphores, Finding{
					Check: CheckSemaphore, T: e.T, Key: e.Key, Hold: entering.id,
					Text: fmt.Sprintf("VIOLATION: %d holders of the semaphore %s (limit %d) claim to be valid at once: %s",
						len(valid), name, limit, strings.Join(valid, ", ")),
				})
			}
		case KindExit:
			delete(inside[name], e.Hold)
		}
	}
}

// semaphoreOf returns the semaphore of semaphores whose permit key is
// key.
func semaphoreOf(key string, semaphores map[string]int) (string, bool) {
	name, _, found := strings.Cut(key, ":permit:")
	if !found {
		return "", false
	}
	_, ok := semaphores[name]
	return name, ok
}
