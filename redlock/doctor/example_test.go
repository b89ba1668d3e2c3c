package doctor_test

import (
	"context"
	"fmt"
	"time"

	"github.com/lockmux/lockmux/internal/trustednodes"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/doctor"
)

// A service checks its nodes at start-up, with the addresses and options it
// gives redlock.New, and refuses to start when a node cannot carry Redlock.
// The in-process server of this example answers neither CONFIG nor the
// INFO fields of a real Redis, so most checks can only warn.
func ExampleRun() {
	servers, stop := trustednodes.StartServers(1)
	defer stop()
	server := servers[0]
	addresses, options := []string{server.Addr()}, redlock.Options{}

	ctx := context.Background()
	reports, err := doctor.Run(ctx, addresses, options, doctor.Options{LongestTTL: 5 * time.Minute})
	if err != nil {
		panic(err)
	}
	for _, report := range reports {
		for _, finding := range report.Findings {
			if finding.Severity != doctor.SeverityOK {
				fmt.Println(finding.Severity, finding.Check) // and finding.Message: what to fix
			}
		}
		if report.Severity() == doctor.SeverityFail {
			fmt.Println("refusing to start:", report.Address, "cannot carry Redlock")
			return
		}
	}

	client, err := redlock.New(addresses, options)
	if err != nil {
		panic(err)
	}
	defer client.Close()
	fmt.Println("started")
	// Output:
	// warn role
	// warn cluster
	// warn run_id
	// warn persistence
	// warn maxmemory-policy
	// warn uptime
	// started
}
