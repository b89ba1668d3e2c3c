package quarantine

// Armed returns how many times WatchMarker armed node's markers.
func (q *Quarantine) Armed(node int) int64 { return q.nodes[node].armed.Load() }

// Pending reports whether node's verdict is unknown: its marker was not
// read since it connected.
func (q *Quarantine) Pending(node int) bool { return q.nodes[node].pending.Load() }
