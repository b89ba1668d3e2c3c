package conn

import (
	"github.com/lockmux/lockmux/resp"
)

// pushCommand is a command written with SendPush whose answer has not all
// come. Its confirmations are push frames, one per argument; a refusal is
// one error reply, which comes after the replies of the calls written
// before it. Counting both lets such an error be told from a call's reply.
type pushCommand struct {
	ahead         int // replies of calls written before it, still to come
	confirmations int // push frames still to confirm it
}

// pushCommands are a link's push commands whose answers are still to come,
// oldest first.
type pushCommands []pushCommand

// written records a push command written behind ahead calls.
func (p *pushCommands) written(command []byte, ahead int) {
	*p = append(*p, pushCommand{ahead: ahead, confirmations: max(arguments(command)-1, 1)})
}

// replyTaken counts a call's reply read.
func (p pushCommands) replyTaken() {
	for i := range p {
		if p[i].ahead > 0 {
			p[i].ahead--
		}
	}
}

// answersNext reports whether the next reply that is not a push frame
// answers the oldest push command: every call written before it has its
// reply.
func (p pushCommands) answersNext() bool {
	return len(p) > 0 && p[0].ahead == 0
}

// pushed counts a push frame: a confirmation of the oldest push command
// once the calls written before it have their replies.
func (p *pushCommands) pushed(push resp.Value) {
	if !p.answersNext() || len(push.Elems) == 0 {
		return
	}
	switch string(push.Elems[0].Str) {
	case "subscribe", "unsubscribe", "ssubscribe", "sunsubscribe", "psubscribe", "punsubscribe":
		(*p)[0].confirmations--
		if (*p)[0].confirmations == 0 {
			p.drop()
		}
	}
}

// drop forgets the oldest push command: it was refused, or confirmed.
func (p *pushCommands) drop() {
	*p = append((*p)[:0], (*p)[1:]...)
}

// arguments returns the length of the RESP array command, or 0 when it
// does not start with an array header.
func arguments(command []byte) int {
	if len(command) < 2 || command[0] != '*' {
		return 0
	}
	n := 0
	for _, digit := range command[1:] {
		if digit < '0' || digit > '9' || n > 1<<20 {
			break
		}
		n = n*10 + int(digit-'0')
	}
	return n
}
