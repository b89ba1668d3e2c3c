package main

import (
	"fmt"
	"time"

	"github.com/lockmux/lockmux/redlock/doctor"
)

// The JSON object of "redlock doctor --json". docs/json.md is its schema:
// a change of a name or a meaning here is a change there, and breaks the
// scripts that read it.

// doctorResultJSON is what doctor --json prints: the reports of the
// nodes, the counts of their findings by severity, and the notes.
type doctorResultJSON struct {
	Nodes    []doctorNodeJSON `json:"nodes"`
	OK       int              `json:"ok"`
	Warnings int              `json:"warnings"`
	Failures int              `json:"failures"`
	// Notes are remarks on the whole set of nodes, such as an even number
	// of them.
	Notes []string `json:"notes"`
	// Complete is false when the checks were cut short, and Error says
	// why.
	Complete bool   `json:"complete"`
	Error    string `json:"error"`
}

// doctorNodeJSON is one node's report.
type doctorNodeJSON struct {
	Address string `json:"address"`
	Version string `json:"redis_version"`
	RunID   string `json:"run_id"`
	// Severity is the worst severity among the node's findings.
	Severity string `json:"severity"`
	// ClockOffset is null when the node's clock could not be read.
	ClockOffset *float64            `json:"clock_offset_ms"`
	Findings    []doctorFindingJSON `json:"findings"`
}

// doctorFindingJSON is the result of one check on one node.
type doctorFindingJSON struct {
	Check    string `json:"check"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

// newDoctorResult sums up the reports of doctor.Run and the error that
// cut it short, or nil.
func newDoctorResult(reports []doctor.NodeReport, err error) doctorResultJSON {
	result := doctorResultJSON{Nodes: make([]doctorNodeJSON, len(reports)), Notes: []string{}, Complete: err == nil, Error: errorText(err)}
	for r, report := range reports {
		node := doctorNodeJSON{Address: report.Address, Version: report.Version, RunID: report.RunID,
			Severity: report.Severity().String(), Findings: make([]doctorFindingJSON, len(report.Findings))}
		for f, finding := range report.Findings {
			node.Findings[f] = doctorFindingJSON{Check: finding.Check, Severity: finding.Severity.String(), Message: finding.Message}
			switch finding.Severity {
			case doctor.SeverityOK:
				result.OK++
			case doctor.SeverityWarn:
				result.Warnings++
			default:
				result.Failures++
			}
		}
		if report.ClockMeasured {
			offset := float64(report.ClockOffset.Nanoseconds()) / float64(time.Millisecond)
			node.ClockOffset = &offset
		}
		result.Nodes[r] = node
	}
	if len(reports)%2 == 0 {
		result.Notes = append(result.Notes, fmt.Sprintf("%d nodes tolerate no more failures than %d would; an odd number is the usual choice",
			len(reports), len(reports)-1))
	}
	return result
}
