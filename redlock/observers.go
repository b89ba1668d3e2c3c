package redlock

// Observers returns an Observer that tells each of observers, in order, of
// every event, so that a Client can feed logs and metrics at once through
// Options.Observer. Nil observers are skipped, and an observer made by
// Observers is flattened into the new one. Observers returns nil when no
// observer is left, which costs nothing, and the observer itself when one
// is left. Passing an event on allocates nothing.
func Observers(observers ...Observer) Observer {
	var list observerList
	for _, observer := range observers {
		switch observer := observer.(type) {
		case nil:
		case observerList:
			list = append(list, observer...)
		default:
			list = append(list, observer)
		}
	}
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return list
}

// observerList is the Observer made by Observers: each event goes to each
// observer of the list, in order. It is never changed once made.
type observerList []Observer

// OnAcquire tells each observer.
func (l observerList) OnAcquire(event AcquireEvent) {
	for _, observer := range l {
		observer.OnAcquire(event)
	}
}

// OnRelease tells each observer.
func (l observerList) OnRelease(event ReleaseEvent) {
	for _, observer := range l {
		observer.OnRelease(event)
	}
}

// OnExtend tells each observer.
func (l observerList) OnExtend(event ExtendEvent) {
	for _, observer := range l {
		observer.OnExtend(event)
	}
}

// OnLost tells each observer.
func (l observerList) OnLost(event LostEvent) {
	for _, observer := range l {
		observer.OnLost(event)
	}
}

// OnNodeError tells each observer.
func (l observerList) OnNodeError(event NodeErrorEvent) {
	for _, observer := range l {
		observer.OnNodeError(event)
	}
}
