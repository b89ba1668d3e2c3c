package main

import (
	"fmt"
	"sync"
	"time"
)

// How often the progress line is written: often on a terminal, where it
// rewrites itself, and seldom elsewhere, where each is a new line of a log.
const (
	terminalProgressPeriod = 200 * time.Millisecond
	plainProgressPeriod    = 2 * time.Second
)

// progressLine shows how a long command is doing on stderr while it runs.
// On a terminal it is one line that rewrites itself; elsewhere it is a
// plain line every plainProgressPeriod. Events are written on lines of
// their own above it. It is safe for concurrent use.
type progressLine struct {
	env    *environment
	render func(elapsed time.Duration) string
	start  time.Time

	mu       sync.Mutex // serialises writes to stderr
	drawn    bool       // a progress line is on screen, without a newline
	lastDraw time.Time  // when the line was last written

	stop    chan struct{}
	drawing sync.WaitGroup
}

// startProgress starts writing the line that render returns.
func startProgress(env *environment, render func(elapsed time.Duration) string) *progressLine {
	p := &progressLine{env: env, render: render, start: time.Now(), stop: make(chan struct{})}
	period := plainProgressPeriod
	if env.terminal {
		period = terminalProgressPeriod
	}
	p.drawing.Go(func() {
		ticker := time.NewTicker(period)
		defer ticker.Stop()
		for {
			select {
			case <-ticker.C:
				p.draw()
			case <-p.stop:
				return
			}
		}
	})
	return p
}

func (p *progressLine) draw() {
	line := p.render(time.Since(p.start))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastDraw = time.Now()
	if p.env.terminal {
		fmt.Fprintf(p.env.stderr, "\r\x1b[K%s", line)
		p.drawn = true
	} else {
		fmt.Fprintln(p.env.stderr, line)
	}
}

// event writes a message on a line of its own.
func (p *progressLine) event(format string, arguments ...any) {
	message := fmt.Sprintf(format, arguments...)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.env.stderr, "\r\x1b[K")
		p.drawn = false
	}
	fmt.Fprintf(p.env.stderr, "%7.1fs  %s\n", time.Since(p.start).Seconds(), message)
}

// finish stops the line and leaves its last state on screen.
func (p *progressLine) finish() {
	close(p.stop)
	p.drawing.Wait()
	p.mu.Lock()
	recent := !p.env.terminal && time.Since(p.lastDraw) < plainProgressPeriod/2
	p.mu.Unlock()
	if !recent {
		p.draw()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.env.stderr)
		p.drawn = false
	}
}
