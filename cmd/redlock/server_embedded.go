package main

import (
	"fmt"

	"github.com/alicebob/miniredis/v2"

	"github.com/lockmux/lockmux/internal/miniinfo"
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
	miniinfo.Install(server) // its INFO, for the quarantine
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

// Wipe closes the server and forgets its data, as a restart without
// persistence loses it.
func (s *embeddedServer) Wipe() (string, error) {
	s.server.Close()
	s.server.FlushAll()
	return "closed, its data removed", nil
}

func (s *embeddedServer) Recover() (string, error) {
	if err := s.server.Restart(); err != nil {
		return "", fmt.Errorf("restart the embedded server at %s: %w", s.address, err)
	}
	miniinfo.Install(s.server) // a new server: a new run_id, its uptime from now
	return "restarted with its data", nil
}

func (s *embeddedServer) Close() error {
	s.server.Close()
	return nil
}
