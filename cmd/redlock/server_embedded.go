package main

import (
	"errors"
	"fmt"

	"github.com/alicebob/miniredis/v2"
)

// embeddedServer is a miniredis server in this process. Its keys expire by
// the wall clock, like a real server's.
type embeddedServer struct {
	server  *miniredis.Miniredis
	address string
}

func startEmbeddedServer() (*embeddedServer, error) {
	server := miniredis.NewMiniRedis()
	server.ClockTTL(true)
	if err := server.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("start an embedded server: %w", err)
	}
	return &embeddedServer{server: server, address: server.Addr()}, nil
}

func (s *embeddedServer) Address() string { return s.address }

func (s *embeddedServer) Stop() (string, error) {
	s.server.Close()
	return "closed", nil
}

func (s *embeddedServer) Crash() (string, error) {
	s.server.Close()
	return "closed", nil
}

// errNoWipe is the error of an embedded server's Wipe.
var errNoWipe = errors.New("an embedded server is not wiped: it cannot run the quarantine's epoch script")

func (s *embeddedServer) Wipe() (string, error) { return "", errNoWipe }

func (s *embeddedServer) Recover() (string, error) {
	if err := s.server.Restart(); err != nil {
		return "", fmt.Errorf("restart the embedded server at %s: %w", s.address, err)
	}
	return "restarted with its data", nil
}

func (s *embeddedServer) Close() error {
	s.server.Close()
	return nil
}
