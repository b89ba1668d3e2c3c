package otel

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/lockmux/lockmux/redlock"
)

// instruments are the Observer's counters and histograms, with the options
// of each measurement made once, so that a measurement allocates nothing
// of its own. Never changed after newInstruments.
type instruments struct {
	lockAttempts, releases, extensions  metric.Int64Counter
	holdsLost, nodeErrors, nodeTimeouts metric.Int64Counter
	quarantined                         metric.Int64Counter

	acquireDuration, releaseDuration, extendDuration metric.Float64Histogram

	// The attributes of each result, with Options.Attributes.
	acquired, notAcquired, released, releaseLost, extended, extendFailed []metric.AddOption
	// plain has only Options.Attributes.
	plain []metric.AddOption
	// recordPlain has only Options.Attributes, for the histograms.
	recordPlain []metric.RecordOption
}

// newInstruments makes the instruments of meter, whose measurements carry
// common and, for the counters by result, lockmux.result.
func newInstruments(meter metric.Meter, common []attribute.KeyValue) (instruments, error) {
	var i instruments
	var errs []error
	counter := func(name, unit, description string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(description))
		errs = append(errs, err)
		return c
	}
	bounds := redlock.HistogramBounds()
	seconds := make([]float64, redlock.HistogramBuckets-1)
	for b := range seconds {
		seconds[b] = bounds[b].Seconds()
	}
	histogram := func(name, description string) metric.Float64Histogram {
		h, err := meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(description),
			metric.WithExplicitBucketBoundaries(seconds...))
		errs = append(errs, err)
		return h
	}
	i.lockAttempts = counter("lockmux.lock.attempts", "{attempt}", "Acquisition attempts (rounds to the nodes), by result.")
	i.releases = counter("lockmux.releases", "{release}", "Releases, by result: released on a quorum, or lost when the hold was found gone.")
	i.extensions = counter("lockmux.extensions", "{extension}", "Extension attempts, explicit or automatic, by result.")
	i.holdsLost = counter("lockmux.holds.lost", "{hold}", "Holds that ended before their release.")
	i.nodeErrors = counter("lockmux.node.errors", "{error}", "Node failures in rounds: errors, timeouts and commands not sent.")
	i.nodeTimeouts = counter("lockmux.node.timeouts", "{timeout}", "Node timeouts in rounds, also counted in lockmux.node.errors.")
	i.quarantined = counter("lockmux.quarantined_votes", "{vote}", "Node confirmations that did not count because their node was quarantined.")
	i.acquireDuration = histogram("lockmux.acquire.duration", "Duration of acquisition attempts, successful or not.")
	i.releaseDuration = histogram("lockmux.release.duration", "Duration of releases.")
	i.extendDuration = histogram("lockmux.extend.duration", "Duration of extension attempts.")
	for _, err := range errs {
		if err != nil {
			return instruments{}, fmt.Errorf("lockmux otel: %w", err)
		}
	}

	withResult := func(result string) []metric.AddOption {
		attributes := append(append([]attribute.KeyValue(nil), common...), keyResult.String(result))
		return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attributes...))}
	}
	i.acquired, i.notAcquired = withResult(resultAcquired), withResult(resultNotAcquired)
	i.released, i.releaseLost = withResult(resultReleased), withResult(resultLost)
	i.extended, i.extendFailed = withResult(resultExtended), withResult(resultFailed)
	plain := metric.WithAttributeSet(attribute.NewSet(common...))
	i.plain = []metric.AddOption{plain}
	i.recordPlain = []metric.RecordOption{plain}
	return i, nil
}

// acquire counts an acquisition attempt that took elapsed.
func (i *instruments) acquire(elapsed time.Duration, acquired bool) {
	ctx := context.Background()
	if acquired {
		i.lockAttempts.Add(ctx, 1, i.acquired...)
	} else {
		i.lockAttempts.Add(ctx, 1, i.notAcquired...)
	}
	i.acquireDuration.Record(ctx, seconds(elapsed), i.recordPlain...)
}

// release counts a release that took elapsed; released is false when it
// failed.
func (i *instruments) release(elapsed time.Duration, released bool) {
	ctx := context.Background()
	if released {
		i.releases.Add(ctx, 1, i.released...)
	} else {
		i.releases.Add(ctx, 1, i.releaseLost...)
	}
	i.releaseDuration.Record(ctx, seconds(elapsed), i.recordPlain...)
}

// extend counts an extension attempt that took elapsed.
func (i *instruments) extend(elapsed time.Duration, extended bool) {
	ctx := context.Background()
	if extended {
		i.extensions.Add(ctx, 1, i.extended...)
	} else {
		i.extensions.Add(ctx, 1, i.extendFailed...)
	}
	i.extendDuration.Record(ctx, seconds(elapsed), i.recordPlain...)
}

// lost counts a hold that ended before its release.
func (i *instruments) lost() {
	i.holdsLost.Add(context.Background(), 1, i.plain...)
}

// nodeError counts a node's failure with outcome: a timeout as a node
// error and a timeout, a quarantined node's confirmation apart, as
// Client.Stats does.
func (i *instruments) nodeError(outcome redlock.Outcome) {
	ctx := context.Background()
	if outcome == redlock.OutcomeQuarantined {
		i.quarantined.Add(ctx, 1, i.plain...)
		return
	}
	i.nodeErrors.Add(ctx, 1, i.plain...)
	if outcome == redlock.OutcomeTimeout {
		i.nodeTimeouts.Add(ctx, 1, i.plain...)
	}
}

// seconds returns d in seconds, a negative d as zero.
func seconds(d time.Duration) float64 {
	return max(d, 0).Seconds()
}
