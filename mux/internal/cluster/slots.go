package cluster

import (
	"strconv"
	"sync"
)

// SlotCount is the number of hash slots of a Redis Cluster (see
// mux.SlotCount).
const SlotCount = 16384

// SlotOf returns the hash slot of a key held in a string or in a byte
// slice, without copying it (see mux.Slot).
func SlotOf[Key string | []byte](key Key) int {
	if open := indexByte(key, '{'); open >= 0 {
		if end := indexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	crc := uint16(0)
	for i := 0; i < len(key); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^key[i]]
	}
	return int(crc) % SlotCount
}

func indexByte[Key string | []byte](key Key, b byte) int {
	for i := 0; i < len(key); i++ {
		if key[i] == b {
			return i
		}
	}
	return -1
}

// crc16Table is the table of CRC-16/XMODEM (polynomial 0x1021), the
// checksum of Redis Cluster's key hashing.
var crc16Table = func() (table [256]uint16) {
	for i := range table {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		table[i] = crc
	}
	return table
}()

// keyAtOne lists the commands a Group sends whose first argument is a key,
// upper case, or, for SPUBLISH, a sharded channel, which lives on the
// master of its slot as a key does. EVAL and EVALSHA name their keys after
// the key count; every other command is keyless: any master of a cluster
// answers it.
var keyAtOne = map[string]bool{
	"GET": true, "SET": true, "DEL": true, "EXISTS": true, "TYPE": true, "TTL": true, "PTTL": true,
	"PEXPIRE": true, "EXPIRE": true, "INCR": true, "ZRANGE": true, "ZCARD": true, "ZSCORE": true,
	"LRANGE": true, "LLEN": true, "HGET": true, "HGETALL": true, "SPUBLISH": true,
}

// routingKey returns the key that decides which server of a cluster gets
// the encoded command: the first key it names. It reports false for a
// keyless command, and for bytes that are not a command.
func routingKey(command []byte) ([]byte, bool) {
	var elements [4][]byte
	count, rest, ok := arrayHeader(command)
	if !ok || count < 2 {
		return nil, false
	}
	read := min(count, len(elements))
	for i := range read {
		if elements[i], rest, ok = bulkString(rest); !ok {
			if i < 2 {
				return nil, false
			}
			read = i
			break
		}
	}
	var name [8]byte
	if len(elements[0]) > len(name) {
		return nil, false
	}
	for i, b := range elements[0] {
		if 'a' <= b && b <= 'z' {
			b -= 'a' - 'A'
		}
		name[i] = b
	}
	switch upper := name[:len(elements[0])]; string(upper) {
	case "EVAL", "EVALSHA":
		if read < 4 {
			return nil, false
		}
		if keys, err := strconv.Atoi(string(elements[2])); err != nil || keys < 1 {
			return nil, false
		}
		return elements[3], true
	default:
		if keyAtOne[string(upper)] {
			return elements[1], true
		}
		return nil, false
	}
}

// arrayHeader reads "*count\r\n" at the start of b.
func arrayHeader(b []byte) (count int, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '*' {
		return 0, nil, false
	}
	return lengthLine(b[1:])
}

// bulkString reads "$length\r\ntext\r\n" at the start of b.
func bulkString(b []byte) (text, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '$' {
		return nil, nil, false
	}
	length, rest, ok := lengthLine(b[1:])
	if !ok || len(rest) < length+2 {
		return nil, nil, false
	}
	return rest[:length], rest[length+2:], true
}

// lengthLine reads a decimal length and its "\r\n".
func lengthLine(b []byte) (int, []byte, bool) {
	n, i := 0, 0
	for ; i < len(b) && i < 10 && '0' <= b[i] && b[i] <= '9'; i++ {
		n = n*10 + int(b[i]-'0')
	}
	if i == 0 || len(b) < i+2 || b[i] != '\r' || b[i+1] != '\n' {
		return 0, nil, false
	}
	return n, b[i+2:], true
}

// SlotTag returns the smallest hash tag of slot (see mux.SlotTag).
func SlotTag(slot int) string { return strconv.FormatUint(uint64(slotTags()[slot]), 10) }

// slotTags holds, per slot, the smallest number whose decimal digits hash
// to it; every slot has one below 110 000.
var slotTags = sync.OnceValue(func() *[SlotCount]uint32 {
	var tags [SlotCount]uint32
	var seen [SlotCount]bool
	var digits [10]byte
	for n, found := uint32(0), 0; found < SlotCount; n++ {
		if slot := SlotOf(strconv.AppendUint(digits[:0], uint64(n), 10)); !seen[slot] {
			tags[slot], seen[slot] = n, true
			found++
		}
	}
	return &tags
})

// FirstArgument returns the first argument of an encoded command: the
// first channel of a push command.
func FirstArgument(command []byte) ([]byte, bool) {
	count, rest, ok := arrayHeader(command)
	if !ok || count < 2 {
		return nil, false
	}
	if _, rest, ok = bulkString(rest); !ok {
		return nil, false
	}
	argument, _, ok := bulkString(rest)
	return argument, ok
}
