package inspect

import "errors"

// ErrClosed is returned by the methods of an Inspector after Close.
var ErrClosed = errors.New("inspect: inspector closed")
