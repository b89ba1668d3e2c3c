package model

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockmux/lockmux/internal/redistest"
)

// spinCheck is one run of SPIN on a model: safe is true when the check
// must find no error in the whole bounded state space, false when it is
// an unsafe switch that must give a counterexample. A liveness check
// looks for acceptance cycles of the model's LTL property under weak
// fairness instead of safety violations.
type spinCheck struct {
	model    string
	defines  []string
	safe     bool
	liveness bool
}

// spinChecks lists every check: each model's safety configurations, and
// each of its unsafe switches. model/README.md describes them.
var spinChecks = []spinCheck{
	{model: "lock.pml", safe: true},
	{model: "lock.pml", defines: []string{"-DRESTART"}, safe: true},
	{model: "lock.pml", defines: []string{"-DNO_DRIFT"}},
	{model: "lock.pml", defines: []string{"-DRESTART", "-DNO_QUARANTINE"}},
	{model: "quarantine.pml", safe: true},
	{model: "quarantine.pml", defines: []string{"-DNO_QUARANTINE"}},
	{model: "quarantine.pml", defines: []string{"-DNO_FOLLOWUP"}},
	{model: "quarantine.pml", defines: []string{"-DREPL_DURABLE"}},
	{model: "quarantine.pml", defines: []string{"-DOLD_SAME"}},
	{model: "quarantine.pml", defines: []string{"-DMARKER_ONLY"}},
	{model: "fence.pml", safe: true},
	{model: "fence.pml", defines: []string{"-DNO_COMMIT"}},
	{model: "fence.pml", defines: []string{"-DVOLATILE"}},
	{model: "rwlock.pml", safe: true},
	{model: "rwlock.pml", defines: []string{"-DREADERS_IGNORE_WRITER"}},
	{model: "rwlock.pml", defines: []string{"-DWRITER_IGNORES_READERS"}},
	{model: "fair.pml", safe: true, liveness: true},
	{model: "fair.pml", defines: []string{"-DNO_LINE"}, liveness: true},
	{model: "semaphore.pml", safe: true},
	{model: "semaphore.pml", defines: []string{"-DCOUNTING"}},
}

// panMemoryMegabytes bounds the memory of one verifier: a model whose
// state space outgrows it fails its check rather than exhaust the machine.
const panMemoryMegabytes = "1024"

var (
	errorsLine = regexp.MustCompile(`errors: (\d+)`)
	statesLine = regexp.MustCompile(`(\d+) states, stored`)
)

// requireTools skips the test when spin or gcc is missing, or fails it
// when LOCKMUX_REQUIRE_REDIS=1 says CI installed them.
func requireTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"spin", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv(redistest.RequireRedisEnv) == "1" {
				t.Fatalf("%s is not on the PATH and %s=1 requires it (apt-get install spin gcc)", tool, redistest.RequireRedisEnv)
			}
			t.Skipf("%s is not on the PATH", tool)
		}
	}
}

func (c spinCheck) name() string {
	name := strings.TrimSuffix(c.model, ".pml")
	for _, define := range c.defines {
		name += "_" + strings.TrimPrefix(define, "-D")
	}
	return name
}

// run generates, compiles and runs the verifier of c in a directory of
// its own, and returns the verifier's output and whether it left a trail.
func (c spinCheck) run(t *testing.T) (string, bool) {
	t.Helper()
	dir := t.TempDir()
	source, err := os.ReadFile(c.model)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, c.model), source, 0o644); err != nil {
		t.Fatal(err)
	}
	command := func(name string, arguments ...string) string {
		cmd := exec.Command(name, arguments...)
		cmd.Dir = dir
		output, err := cmd.CombinedOutput()
		// pan exits 0 whether or not it found errors: its report says.
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(arguments, " "), err, output)
		}
		return string(output)
	}
	command("spin", append(append([]string{}, c.defines...), "-a", c.model)...)
	// SAFETY: safety properties only; COLLAPSE: compressed states;
	// MEMLIM: a bound on the verifier's memory. A liveness check searches
	// for acceptance cycles (-a) under weak fairness (-f).
	compile := []string{"-w", "-O2", "-DSAFETY", "-DCOLLAPSE", "-DMEMLIM=" + panMemoryMegabytes, "-o", "pan", "pan.c"}
	search := []string{"-m100000"}
	if c.liveness {
		compile = slices.DeleteFunc(compile, func(flag string) bool { return flag == "-DSAFETY" })
		search = append(search, "-a", "-f")
	}
	command("gcc", compile...)
	output := command("./pan", search...)
	_, err = os.Stat(filepath.Join(dir, c.model+".trail"))
	return output, err == nil
}

// TestModels runs every model's safety check and every unsafe switch.
func TestModels(t *testing.T) {
	requireTools(t)
	for _, check := range spinChecks {
		t.Run(check.name(), func(t *testing.T) {
			t.Parallel()
			output, trail := check.run(t)
			match := errorsLine.FindStringSubmatch(output)
			if match == nil {
				t.Fatalf("no error count in the verifier's report:\n%s", output)
			}
			errorCount, _ := strconv.Atoi(match[1])
			states := "?"
			if m := statesLine.FindStringSubmatch(output); m != nil {
				states = m[1]
			}
			if !check.safe {
				violation := "assertion violated"
				if check.liveness {
					violation = "acceptance cycle"
				}
				if errorCount == 0 || !trail || !strings.Contains(output, violation) {
					t.Fatalf("the unsafe switch %v gave no counterexample (errors: %d, trail: %v):\n%s", check.defines, errorCount, trail, output)
				}
				t.Logf("counterexample found after %s states", states)
				return
			}
			if errorCount != 0 {
				replay := strings.Join(append(append([]string{"spin"}, check.defines...), "-t", "-p", check.model), " ")
				t.Fatalf("the model violates its property (replay: %s):\n%s", replay, output)
			}
			for _, incomplete := range []string{"max search depth too small", "reached -DMEMLIM bound", "hint: to reduce memory"} {
				if strings.Contains(output, incomplete) {
					t.Fatalf("the search was not exhaustive (%s):\n%s", incomplete, output)
				}
			}
			if !strings.Contains(output, "Full statespace search") {
				t.Fatalf("not a full state space search:\n%s", output)
			}
			t.Logf("%s states, no error", states)
		})
	}
}
