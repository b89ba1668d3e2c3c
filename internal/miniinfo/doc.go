// Package miniinfo makes a miniredis server answer the INFO sections that
// lockmux's quarantine reads (server, replication, persistence, stats and
// commandstats) as a Redis 7 master without persistence would.
package miniinfo
