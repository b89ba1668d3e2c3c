// Package latency holds the project's one latency histogram: redlock's
// Stats, the redlock command's bench and demo, and the chaos run's
// latency check all record into a Histogram.
//
// Its buckets split each of redlock's doubling buckets (the first up to
// 16 µs, each next one twice as wide) into 32 of equal width, so that a
// Histogram answers percentiles to about 3 % and folds exactly into the
// buckets of redlock.Histogram (see Levels).
//
// # Concurrency
//
// A Histogram is safe for concurrent use: every counter is atomic, so
// recorders take no lock and a reader may summarise while they record.
//
// # Errors
//
// Nothing here fails; a negative duration counts as zero.
package latency
