package redlock

// Observers returns an Observer that tells each of observers of every
// event, in order, without allocating. Nil observers are skipped; it
// returns nil when none is left, and the observer itself when one is.
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

// observerList is the Observer made by Observers; it is never changed.
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
