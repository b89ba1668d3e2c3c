package safety

import (
	"fmt"
	"slices"
	"strings"
)

// FaultName returns the name of the fault that a KindNemesis or KindHeal
// event's What describes: the text up to its first " (", which starts the
// details ("F10 latency (40ms)" is the fault "F10 latency").
func FaultName(what string) string {
	name, _, _ := strings.Cut(what, " (")
	return name
}

// countFaults counts, by name, the faults that began (KindNemesis) and
// then healed (KindHeal of the same name), and lists the faults of
// options.RequiredFaults that never did. The nemesis injects one fault of
// a name at a time, so a heal ends the last begun fault of its name.
func countFaults(history []Event, options Options, report *Report) {
	open := make(map[string]int)
	for _, e := range history {
		switch e.Kind {
		case KindNemesis:
			open[FaultName(e.What)]++
		case KindHeal:
			if name := FaultName(e.What); open[name] > 0 {
				open[name]--
				report.Faults[name]++
			}
		}
	}
	for _, name := range options.RequiredFaults {
		if report.Faults[name] == 0 && !slices.Contains(report.MissingFaults, name) {
			report.MissingFaults = append(report.MissingFaults, name)
		}
	}
}

// missingFaultsError says which required faults never ran, or is nil.
func (r *Report) missingFaultsError() error {
	if len(r.MissingFaults) == 0 {
		return nil
	}
	return fmt.Errorf("faults scheduled that never began and healed, so the run proves nothing about them: %s",
		strings.Join(r.MissingFaults, "; "))
}
