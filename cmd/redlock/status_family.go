package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/lockmux/lockmux/redlock/inspect"
)

// semaphoreState tells whether every permit of a semaphore with limit
// permits is held (full), some permit is unknown (unknown), or a permit
// is free (available).
func semaphoreState(semaphore inspect.SemaphoreStatus, limit int) string {
	if semaphore.Held() == limit {
		return stateFull
	}
	for _, permit := range semaphore.Permits {
		if lockState(permit) == stateUnknown {
			return stateUnknown
		}
	}
	return stateAvailable
}

// semaphoreStatus shows each permit of the semaphore name: held by a
// quorum, by which token, or free.
func semaphoreStatus(ctx context.Context, env *environment, inspector *inspect.Inspector, name string, limit int, asJSON bool) int {
	semaphore, err := inspector.SemaphoreStatus(ctx, name, limit)
	if err != nil {
		fmt.Fprintf(env.stderr, "redlock status: %v\n", err)
		return statusOf(err)
	}
	state := semaphoreState(semaphore, limit)
	if asJSON {
		writeJSON(env.stdout, newSemaphoreStatusJSON(semaphore, limit))
		return stateStatus(state)
	}
	table := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(table, "PERMIT\tHELD\tTOKEN\tNODES")
	for _, permit := range semaphore.Permits {
		switch lockState(permit) {
		case stateLocked:
			fmt.Fprintf(table, "%s\tyes\t%s\t%d of %d\n", permit.Key, permit.Holder, permit.Holders, len(permit.Nodes))
		case stateUnknown:
			fmt.Fprintf(table, "%s\t?\t\tonly %d of %d answered\n", permit.Key, permit.Answered, len(permit.Nodes))
		default:
			fmt.Fprintf(table, "%s\tno\t-\t%d of %d\n", permit.Key, permit.Holders, len(permit.Nodes))
		}
	}
	table.Flush()
	fmt.Fprintf(env.stdout, "%q: %d of %d permits held\n", name, semaphore.Held(), limit)
	return stateStatus(state)
}

// readWriteState tells whether a read/write lock is written, read, free
// or unknown.
func readWriteState(status inspect.RWStatus) string {
	writer := status.Writer
	switch {
	case writer.Locked():
		return stateWritten
	case status.ReadHolds > 0:
		return stateRead
	case writer.Answered < writer.Need:
		return stateUnknown
	}
	return stateFree
}

// readWriteStatus shows the read/write lock name: on each node its writer
// and its live readers, then who holds it.
func readWriteStatus(ctx context.Context, env *environment, inspector *inspect.Inspector, name string, asJSON bool) int {
	status, err := inspector.RWStatus(ctx, name)
	if err != nil {
		fmt.Fprintf(env.stderr, "redlock status: %v\n", err)
		return statusOf(err)
	}
	state := readWriteState(status)
	if asJSON {
		writeJSON(env.stdout, newRWStatusJSON(status, name))
		return stateStatus(state)
	}
	table := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(table, "NODE\tWRITER\tTOKEN\tREADERS")
	for n, node := range status.Writer.Nodes {
		readers := fmt.Sprint(status.Readers[n])
		if status.Readers[n] < 0 {
			readers = fmt.Sprintf("? (%v)", status.ReaderErrs[n])
		}
		switch {
		case node.Err != nil:
			fmt.Fprintf(table, "%s\t?\t\t%s\terror: %v\n", node.Address, readers, node.Err)
		case node.Held:
			fmt.Fprintf(table, "%s\tyes\t%s\t%s\n", node.Address, node.TokenPrefix, readers)
		default:
			fmt.Fprintf(table, "%s\tno\t-\t%s\n", node.Address, readers)
		}
	}
	table.Flush()
	writer := status.Writer
	switch state {
	case stateWritten:
		fmt.Fprintf(env.stdout, "%q is written: token %s… on %d of %d nodes (quorum %d)\n", name, writer.Holder, writer.Holders, len(writer.Nodes), writer.Need)
	case stateRead:
		fmt.Fprintf(env.stdout, "%q is read: %d read holds, each on a quorum of %d nodes\n", name, status.ReadHolds, writer.Need)
	case stateUnknown:
		fmt.Fprintf(env.stdout, "unknown: only %d of %d nodes answered, and a quorum is %d\n", writer.Answered, len(writer.Nodes), writer.Need)
	default:
		fmt.Fprintf(env.stdout, "%q is free: nobody reads or writes it\n", name)
	}
	return stateStatus(state)
}
