package conn

// Unread returns the bytes that have arrived on c's live connection and
// that nobody has read: in the reader's buffer and in the socket's receive
// queue. Tests use it to know that a frame has arrived before they go on.
func Unread(c *Conn) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.life.link == nil {
		return 0
	}
	return c.life.link.reader.Buffered() + c.life.link.received.received()
}

// Pending returns the number of commands on c whose replies have not been
// read.
func Pending(c *Conn) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending.len()
}
